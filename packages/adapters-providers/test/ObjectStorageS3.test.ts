import { randomBytes } from "node:crypto"
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { assert, describe, it, layer } from "@effect/vitest"
import { ArtifactStoreS3, BackupStoreS3, BundleReader, ObjectStoreS3, S3Bucket } from "@hostplane/adapters-providers"
import { Deployments } from "@hostplane/core"
import {
  artifactStoreSuite,
  backupStoreSuite,
  bundleOf,
  manifestEntry,
  objectStoreSuite,
  patternBytes,
  S3rverBucket,
  type S3rverBucketInfo,
  sampleEntries,
  streamOfBytes
} from "@hostplane/testkit"
import { ConfigProvider, Effect, Exit, Layer, Option, Redacted, Schema, Stream } from "effect"
import { filesUnder, tempDir } from "./support/TempFiles.ts"

class Broken extends Schema.TaggedError<Broken>()("Broken", {}) {}

const settingsFrom = (env: Record<string, string>) => S3Bucket.settingsConfig.parse(ConfigProvider.fromEnvRecord(env))

const envOf = (info: S3rverBucketInfo, extra: Record<string, string> = {}) => ({
  SERVICE_S3_URL: info.url,
  SERVICE_S3_ACCESS_KEY_ID: info.accessKeyId,
  SERVICE_S3_SECRET_ACCESS_KEY: info.secretAccessKey,
  ...extra
})

/** A bucket client on the running s3rver, through the same settings the server reads. */
const bucketOn = (info: S3rverBucketInfo, extra: Record<string, string> = {}) =>
  Effect.map(settingsFrom(envOf(info, extra)), (settings) => S3Bucket.make(Option.getOrThrow(settings)))

/** A store layer on its own s3rver. */
const onS3rver = <S>(build: (bucket: S3Bucket.S3Bucket) => Effect.Effect<Layer.Layer<S>>, prefix = "") =>
  Layer.unwrap(
    Effect.gen(function* () {
      return yield* build(yield* bucketOn(yield* S3rverBucket, { SERVICE_S3_PREFIX: prefix }))
    })
  ).pipe(Layer.provide(S3rverBucket.layer))

const cachedArtifacts = (bucket: S3Bucket.S3Bucket, maxBytes = 64 * 1024 * 1024) =>
  Effect.gen(function* () {
    const dir = yield* tempDir("artifact-cache")
    return yield* ArtifactStoreS3.make(bucket, { dir, maxBytes })
  })

objectStoreSuite(
  "S3 bucket (s3rver)",
  onS3rver((bucket) => Effect.succeed(ObjectStoreS3.layer(bucket)), "install-a")
)
backupStoreSuite(
  "S3 bucket (s3rver)",
  onS3rver((bucket) => Effect.succeed(BackupStoreS3.layer(bucket)))
)
artifactStoreSuite(
  "S3 bucket (s3rver)",
  onS3rver((bucket) => Effect.succeed(Layer.effect(Deployments.ArtifactStore, cachedArtifacts(bucket))))
)

const everyKey = (bucket: S3Bucket.S3Bucket) =>
  Effect.map(Stream.runCollect(bucket.list("")), (items) => Array.from(items, (item) => item.key).sort())

describe("the S3 settings", () => {
  it.effect("SERVICE_S3_URL is endpoint and bucket, path style; region us-east-1 and an empty prefix by default", () =>
    Effect.gen(function* () {
      const amazon = Option.getOrThrow(
        yield* settingsFrom({ SERVICE_S3_URL: "https://s3.eu-west-1.amazonaws.com/my-bucket" })
      )
      assert.strictEqual(amazon.endpoint, "https://s3.eu-west-1.amazonaws.com")
      assert.strictEqual(amazon.bucket, "my-bucket")
      assert.strictEqual(amazon.region, "us-east-1")
      assert.strictEqual(amazon.prefix, "")
      assert.isTrue(Option.isNone(amazon.credentials))
      const local = Option.getOrThrow(
        yield* settingsFrom({
          SERVICE_S3_URL: "http://127.0.0.1:3900/hostplane/",
          SERVICE_S3_REGION: "garage",
          SERVICE_S3_PREFIX: "prod",
          SERVICE_S3_ACCESS_KEY_ID: "GK123",
          SERVICE_S3_SECRET_ACCESS_KEY: "sekrit"
        })
      )
      assert.deepStrictEqual(
        [local.endpoint, local.bucket, local.region, local.prefix],
        ["http://127.0.0.1:3900", "hostplane", "garage", "prod/"]
      )
      assert.strictEqual(Redacted.value(Option.getOrThrow(local.credentials).secretAccessKey), "sekrit")
      assert.isTrue(Option.isNone(yield* settingsFrom({})))
    })
  )

  it.effect("a URL without a bucket, with credentials in it, or one key without the other is a config error", () =>
    Effect.gen(function* () {
      for (const env of [
        { SERVICE_S3_URL: "https://s3.amazonaws.com" },
        { SERVICE_S3_URL: "ftp://host/bucket" },
        { SERVICE_S3_URL: "https://key:secret@host/bucket" },
        { SERVICE_S3_URL: "http://127.0.0.1:4568/b", SERVICE_S3_ACCESS_KEY_ID: "only-the-id" }
      ]) {
        assert.isTrue(Exit.isFailure(yield* Effect.exit(settingsFrom(env))), JSON.stringify(env))
      }
    })
  )
})

layer(S3rverBucket.layer, { timeout: 120_000, excludeTestServices: true })(
  "artifacts in an S3 bucket (s3rver)",
  (it) => {
    it.effect("an accepted bundle: blobs under artifacts/sha256/, its index under artifacts/index/, no tmp/ left", () =>
      Effect.gen(function* () {
        const bucket = yield* bucketOn(yield* S3rverBucket, {
          SERVICE_S3_PREFIX: `accepted-${randomBytes(4).toString("hex")}`
        })
        const store = yield* cachedArtifacts(bucket)
        const reader = BundleReader.make(store)
        const bundle = yield* bundleOf(sampleEntries)
        const read = yield* reader.read(streamOfBytes(bundle, 1000))
        const index = Option.getOrThrow(yield* store.index(read.digest))
        const hex = (digest: string) => digest.slice("sha256:".length)
        assert.deepStrictEqual(
          yield* everyKey(bucket),
          [
            `artifacts/index/${hex(read.digest)}.json`,
            `artifacts/sha256/${hex(read.digest)}`,
            `artifacts/sha256/${hex(index.tar)}`
          ].sort()
        )
        const file = Option.getOrThrow(yield* store.file(read.digest, "assets/index.html"))
        assert.strictEqual(
          new TextDecoder().decode(yield* Stream.mkUint8Array(file.content)),
          "<!doctype html><h1>hi</h1>\n"
        )
      })
    )

    it.effect("reads by the edge fill the local cache keyed by digest, then come from it", () =>
      Effect.gen(function* () {
        const info = yield* S3rverBucket
        const bucket = yield* bucketOn(info, { SERVICE_S3_PREFIX: `cache-${randomBytes(4).toString("hex")}` })
        const dir = yield* tempDir("artifact-cache")
        const store = yield* ArtifactStoreS3.make(bucket, { dir, maxBytes: 64 * 1024 * 1024 })
        const read = yield* BundleReader.make(store).read(streamOfBytes(yield* bundleOf(sampleEntries)))
        const tar = Option.getOrThrow(yield* store.index(read.digest)).tar
        yield* Option.getOrThrow(yield* store.file(read.digest, "assets/index.html")).content.pipe(Stream.runDrain)
        for (let tries = 0; tries < 400 && !(yield* filesUnder(dir)).includes(tar.slice(7)); tries++) {
          yield* Effect.sleep("25 millis")
        }
        assert.deepStrictEqual(yield* filesUnder(dir), [tar.slice(7)], "the inflated tar is cached under its digest")
        // The bucket loses the object: the cached copy still serves.
        yield* bucket.remove(`artifacts/sha256/${tar.slice(7)}`)
        const file = Option.getOrThrow(yield* store.file(read.digest, "assets/index.html"))
        assert.strictEqual(
          new TextDecoder().decode(yield* Stream.mkUint8Array(file.content)),
          "<!doctype html><h1>hi</h1>\n"
        )
      })
    )

    it.effect("the cache stays under its bound: the least recently used blob goes first", () =>
      Effect.gen(function* () {
        const bucket = yield* bucketOn(yield* S3rverBucket, {
          SERVICE_S3_PREFIX: `bound-${randomBytes(4).toString("hex")}`
        })
        const dir = yield* tempDir("artifact-cache")
        const store = yield* ArtifactStoreS3.make(bucket, { dir, maxBytes: 250_000 })
        const digests: Array<string> = []
        for (let i = 0; i < 3; i++) {
          const bundle = yield* bundleOf([manifestEntry(), { name: "assets/blob.bin", content: randomBytes(100_000) }])
          const read = yield* BundleReader.make(store).read(streamOfBytes(bundle))
          yield* Option.getOrThrow(yield* store.file(read.digest, "assets/blob.bin")).content.pipe(Stream.runDrain)
          const tar = Option.getOrThrow(yield* store.index(read.digest)).tar.slice(7)
          for (let tries = 0; tries < 400 && !(yield* filesUnder(dir)).includes(tar); tries++) {
            yield* Effect.sleep("25 millis")
          }
          digests.push(tar)
        }
        const cached = yield* filesUnder(dir)
        assert.deepStrictEqual(cached, digests.slice(1).sort(), "two tars of about 100 KB fit; the first went")
      })
    )

    it.effect("a refused bundle above the part size leaves nothing in the bucket", () =>
      Effect.gen(function* () {
        const bucket = yield* bucketOn(yield* S3rverBucket, {
          SERVICE_S3_PREFIX: `refused-${randomBytes(4).toString("hex")}`
        })
        const store = yield* cachedArtifacts(bucket)
        // Incompressible, so both the upload and its inflated tar go up in parts; no service.json, so it is refused.
        const bundle = yield* bundleOf([{ name: "assets/noise.bin", content: randomBytes(10 * 1024 * 1024) }])
        const error = yield* Effect.flip(BundleReader.make(store).read(streamOfBytes(bundle)))
        assert.strictEqual(error._tag, "InvalidBundle")
        assert.deepStrictEqual(yield* everyKey(bucket), [])
      })
    )

    it.effect("an artifact whose object vanished is ArtifactStoreUnavailable when a file is asked, not a crash", () =>
      Effect.gen(function* () {
        const bucket = yield* bucketOn(yield* S3rverBucket, {
          SERVICE_S3_PREFIX: `vanished-${randomBytes(4).toString("hex")}`
        })
        const store = yield* cachedArtifacts(bucket)
        const read = yield* BundleReader.make(store).read(streamOfBytes(yield* bundleOf(sampleEntries)))
        const tar = Option.getOrThrow(yield* store.index(read.digest)).tar
        yield* bucket.remove(`artifacts/sha256/${tar.slice(7)}`)
        const error = yield* Effect.flip(store.file(read.digest, "assets/index.html"))
        assert.strictEqual(error._tag, "ArtifactStoreUnavailable")
        assert.match(error.message, /gone from the bucket/)
        const opened = yield* Effect.flip(Stream.runDrain(store.open(tar)))
        assert.strictEqual(opened._tag, "ArtifactStoreUnavailable")
      })
    )
  }
)

describe("a bucket that does not answer", () => {
  const downBucket = Effect.gen(function* () {
    // A port nothing listens on: every request is refused at once.
    const port = yield* Effect.promise(
      () =>
        new Promise<number>((resolve) => {
          const probe = createServer().listen(0, "127.0.0.1", () => {
            const { port } = probe.address() as AddressInfo
            probe.close(() => resolve(port))
          })
        })
    )
    const settings = yield* settingsFrom({
      SERVICE_S3_URL: `http://127.0.0.1:${port}/hostplane`,
      SERVICE_S3_ACCESS_KEY_ID: "id",
      SERVICE_S3_SECRET_ACCESS_KEY: "secret"
    })
    return S3Bucket.make(Option.getOrThrow(settings))
  })

  it.effect(
    "uploads fail with the store's own error (503 artifact_store_unavailable for bundles), never a defect",
    () =>
      Effect.gen(function* () {
        const bucket = yield* downBucket
        const artifacts = yield* cachedArtifacts(bucket)
        const bundle = yield* bundleOf(sampleEntries)
        const refused = yield* Effect.flip(BundleReader.make(artifacts).read(streamOfBytes(bundle)))
        assert.strictEqual(refused._tag, "ArtifactStoreUnavailable")
        const file = yield* Effect.flip(artifacts.file(`sha256:${"0".repeat(64)}`, "assets/index.html"))
        assert.strictEqual(file._tag, "ArtifactStoreUnavailable")
        const objects = ObjectStoreS3.make(bucket)
        const put = yield* Effect.flip(objects.put("prj_1/a", Stream.make(new Uint8Array([1]))))
        assert.strictEqual(put.reason, "Unavailable")
        const backups = BackupStoreS3.make(bucket)
        const image = yield* Effect.flip(backups.put("prj_1/1-1-a.tar.gz", Stream.make(new Uint8Array([1]))))
        assert.strictEqual(image._tag, "BackupStoreError")
      })
  )
})

interface Recorded {
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage["headers"]
  readonly bytes: number
}

/**
 * A loopback stand-in for an S3 endpoint that records every request and answers the few calls the adapters make,
 * the way S3 does: what s3rver cannot show (it checks no conditional write, and signs nothing it answers).
 */
const recordingS3 = (options: { readonly failPart?: number; readonly preconditionFails?: boolean } = {}) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const requests: Array<Recorded> = []
      const server = createServer((request, response) => {
        let bytes = 0
        request.on("data", (chunk: Buffer) => (bytes += chunk.byteLength))
        request.on("end", () => {
          requests.push({ method: request.method!, url: request.url!, headers: request.headers, bytes })
          const url = new URL(request.url!, "http://stub")
          const xml = (body: string) => {
            response.writeHead(200, { "content-type": "application/xml" })
            response.end(`<?xml version="1.0" encoding="UTF-8"?>${body}`)
          }
          if (request.method === "HEAD") {
            response.writeHead(404)
            return response.end()
          }
          if (request.method === "POST" && url.searchParams.has("uploads")) {
            return xml(
              "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>up-1</UploadId></InitiateMultipartUploadResult>"
            )
          }
          if (request.method === "POST" && url.searchParams.has("uploadId")) {
            return xml('<CompleteMultipartUploadResult><ETag>"e"</ETag></CompleteMultipartUploadResult>')
          }
          if (request.method === "DELETE") {
            response.writeHead(204)
            return response.end()
          }
          if (request.method === "PUT" && url.searchParams.get("partNumber") === String(options.failPart)) {
            response.writeHead(500, { "content-type": "application/xml" })
            return response.end("<Error><Code>InternalError</Code><Message>stub</Message></Error>")
          }
          if (
            request.method === "PUT" &&
            options.preconditionFails === true &&
            request.headers["if-none-match"] === "*"
          ) {
            response.writeHead(412, { "content-type": "application/xml" })
            return response.end("<Error><Code>PreconditionFailed</Code><Message>exists</Message></Error>")
          }
          response.writeHead(200, { etag: '"e"' })
          response.end()
        })
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      const { port } = server.address() as AddressInfo
      return { server, requests, url: `http://127.0.0.1:${port}/the-bucket` }
    }),
    ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
  )

const stubBucket = (url: string) =>
  Effect.map(
    settingsFrom({
      SERVICE_S3_URL: url,
      SERVICE_S3_REGION: "eu-central-1",
      SERVICE_S3_PREFIX: "pre",
      SERVICE_S3_ACCESS_KEY_ID: "AKIDSTUB",
      SERVICE_S3_SECRET_ACCESS_KEY: "stub-secret-never-sent"
    }),
    (settings) => S3Bucket.make(Option.getOrThrow(settings))
  )

describe("what the adapters send (a recording stub)", () => {
  it.effect("every request is path style and signed with SigV4 for the region; the secret is never sent", () =>
    Effect.gen(function* () {
      const stub = yield* recordingS3()
      const store = ObjectStoreS3.make(yield* stubBucket(stub.url))
      yield* store.put("prj_1/a b.txt", Stream.make(new TextEncoder().encode("hello")))
      const put = stub.requests.find((request) => request.method === "PUT")!
      assert.strictEqual(put.url.split("?")[0], "/the-bucket/pre/storage/prj_1/a%20b.txt")
      assert.match(
        String(put.headers.authorization),
        /^AWS4-HMAC-SHA256 Credential=AKIDSTUB\/\d{8}\/eu-central-1\/s3\/aws4_request, SignedHeaders=[^,]*host[^,]*, Signature=[0-9a-f]{64}$/
      )
      assert.isString(put.headers["x-amz-date"])
      assert.isString(put.headers["x-amz-content-sha256"])
      for (const request of stub.requests) {
        assert.notInclude(JSON.stringify(request.headers), "stub-secret-never-sent")
        assert.match(request.url, /^\/the-bucket\//)
      }
    })
  )

  it.effect("a body above 8 MiB goes up as a multipart upload: create, the parts, complete", () =>
    Effect.gen(function* () {
      const stub = yield* recordingS3()
      const store = BackupStoreS3.make(yield* stubBucket(stub.url))
      const bytes = new Uint8Array(9 * 1024 * 1024)
      yield* store.put("prj_1/1-1-a.tar.gz", streamOfBytes(bytes))
      const calls = stub.requests.map((request) => `${request.method} ${request.url}`)
      assert.deepStrictEqual(
        stub.requests.map((request) => {
          const url = new URL(request.url, "http://stub")
          return `${request.method} ${url.pathname} ${[...url.searchParams.keys()].filter((key) => key !== "x-id").join(",")}`
        }),
        [
          "POST /the-bucket/pre/backups/prj_1/1-1-a.tar.gz uploads",
          "PUT /the-bucket/pre/backups/prj_1/1-1-a.tar.gz partNumber,uploadId",
          "PUT /the-bucket/pre/backups/prj_1/1-1-a.tar.gz partNumber,uploadId",
          "POST /the-bucket/pre/backups/prj_1/1-1-a.tar.gz uploadId"
        ],
        calls.join("\n")
      )
      const parts = stub.requests.filter((request) => request.method === "PUT").map((request) => request.bytes)
      parts.sort((a, b) => b - a)
      assert.deepStrictEqual(parts, [8 * 1024 * 1024, 1024 * 1024])
    })
  )

  it.effect("exactly one part's bytes are one PUT; each part but the last is 8 MiB, whatever the chunks", () =>
    Effect.gen(function* () {
      const stub = yield* recordingS3()
      const store = BackupStoreS3.make(yield* stubBucket(stub.url))
      yield* store.put("prj_1/one.tar.gz", streamOfBytes(new Uint8Array(8 * 1024 * 1024), 300_000))
      assert.deepStrictEqual(
        stub.requests.map((request) => `${request.method} ${request.bytes}`),
        [`PUT ${8 * 1024 * 1024}`]
      )
      const multi = yield* recordingS3()
      const other = BackupStoreS3.make(yield* stubBucket(multi.url))
      const bytes = patternBytes(17 * 1024 * 1024 + 5, 1)
      const written = yield* other.put("prj_1/three.tar.gz", streamOfBytes(bytes, 777_777))
      assert.strictEqual(written.bytes, bytes.byteLength)
      const parts = multi.requests.filter((request) => request.method === "PUT").map((request) => request.bytes)
      assert.deepStrictEqual(parts, [8 * 1024 * 1024, 8 * 1024 * 1024, 1024 * 1024 + 5])
    })
  )

  it.effect("a multipart upload whose body fails, or whose part the bucket refuses, is aborted", () =>
    Effect.gen(function* () {
      const stub = yield* recordingS3()
      const store = ObjectStoreS3.make(yield* stubBucket(stub.url))
      const big = streamOfBytes(new Uint8Array(17 * 1024 * 1024))
      const error = yield* Effect.flip(store.put("prj_1/big", Stream.concat(big, Stream.fail(new Broken()))))
      assert.strictEqual(error._tag, "Broken")
      assert.isTrue(
        stub.requests.some((request) => request.method === "DELETE" && request.url.includes("uploadId=up-1")),
        "AbortMultipartUpload was sent"
      )
      assert.isFalse(stub.requests.some((request) => request.method === "POST" && !request.url.includes("uploads")))

      const refusing = yield* recordingS3({ failPart: 2 })
      const other = ObjectStoreS3.make(yield* stubBucket(refusing.url))
      const refused = yield* Effect.flip(other.put("prj_1/big", streamOfBytes(new Uint8Array(17 * 1024 * 1024))))
      assert.strictEqual(refused._tag, "ObjectStoreError")
      assert.strictEqual(refused.reason, "Unavailable")
      assert.isTrue(
        refusing.requests.some((request) => request.method === "DELETE"),
        "AbortMultipartUpload was sent"
      )
    })
  )

  it.effect(
    "a bundle index is written only where none is (If-None-Match: *); a refused conditional write is fine",
    () =>
      Effect.gen(function* () {
        const stub = yield* recordingS3({ preconditionFails: true })
        const dir = yield* tempDir("artifact-cache")
        const store = yield* ArtifactStoreS3.make(yield* stubBucket(stub.url), { dir, maxBytes: 1024 })
        const digest = `sha256:${"a".repeat(64)}`
        yield* store.putIndex(digest, { tar: `sha256:${"b".repeat(64)}`, files: [] })
        const put = stub.requests.find((request) => request.method === "PUT")!
        assert.strictEqual(put.url.split("?")[0], `/the-bucket/pre/artifacts/index/${"a".repeat(64)}.json`)
        assert.strictEqual(put.headers["if-none-match"], "*")
      })
  )
})
