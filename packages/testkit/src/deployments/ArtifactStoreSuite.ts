import { createHash } from "node:crypto"
import { assert, layer } from "@effect/vitest"
import { Deployments } from "@hostplane/core"
import { Effect, Exit, Fiber, type Layer, Option, Schema, Stream } from "effect"
import { patternBytes, streamOfBytes } from "./BundleFixtures.ts"

class Broken extends Schema.TaggedError<Broken>()("Broken", {}) {}

const text = (value: string) => new TextEncoder().encode(value)
const sha256 = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`
const unique = (what: string) => text(`${what} ${globalThis.crypto.randomUUID()}\n`)

const collect = <E>(stream: Stream.Stream<Uint8Array, E>) =>
  Effect.map(Stream.mkUint8Array(stream), (bytes) => new TextDecoder().decode(bytes))

/** The `ArtifactStore` contract: every adapter (memory, the local folder, an S3 bucket) must pass it. */
export const artifactStoreSuite = <E>(name: string, artifacts: Layer.Layer<Deployments.ArtifactStore, E>): void =>
  // The wall clock: a put is interrupted after real time passes.
  layer(artifacts, { timeout: 120_000, excludeTestServices: true })(`${name}: ArtifactStore contract`, (it) => {
    it.effect("put streams the bytes in and answers their sha256 digest and size; open streams them back", () =>
      Effect.gen(function* () {
        const store = yield* Deployments.ArtifactStore
        const bytes = new Uint8Array([...unique("artifact"), ...text("hello artifacts\n".repeat(10_000))])
        const stored = yield* store.put(streamOfBytes(bytes, 4096))
        assert.deepStrictEqual(stored, { digest: sha256(bytes), bytes: bytes.byteLength, created: true })
        assert.isTrue(yield* store.has(stored.digest))
        assert.deepStrictEqual(yield* Stream.mkUint8Array(store.open(stored.digest)), bytes)
      })
    )

    it.effect("the same bytes put twice are one digest", () =>
      Effect.gen(function* () {
        const store = yield* Deployments.ArtifactStore
        const bytes = unique("same")
        const [first, second] = yield* Effect.all(
          [store.put(streamOfBytes(bytes, 1)), store.put(streamOfBytes(bytes, 3))],
          {
            concurrency: "unbounded"
          }
        )
        assert.deepStrictEqual({ ...first, created: true }, { ...second, created: true })
        // At least one of the two stored them (both may have, each finding no copy before its commit).
        assert.isTrue(first.created || second.created)
        assert.strictEqual(yield* collect(store.open(first.digest)), new TextDecoder().decode(bytes))
      })
    )

    it.effect(
      "discard removes what a refused upload created: the bytes and the bundle's index; a put creates them again",
      () =>
        Effect.gen(function* () {
          const store = yield* Deployments.ArtifactStore
          const refused = unique("refused bundle")
          const bundle = yield* store.put(streamOfBytes(refused))
          const tar = yield* store.put(streamOfBytes(unique("its tar")))
          const kept = yield* store.put(streamOfBytes(unique("another bundle")))
          yield* store.putIndex(bundle.digest, {
            tar: tar.digest,
            files: [{ path: "service.json", offset: 0, bytes: 2 }]
          })
          assert.isTrue(Option.isSome(yield* store.file(bundle.digest, "service.json")))
          yield* store.discard([bundle.digest, tar.digest])
          assert.isFalse(yield* store.has(bundle.digest))
          assert.isFalse(yield* store.has(tar.digest))
          assert.isTrue(Option.isNone(yield* store.index(bundle.digest)))
          assert.isTrue(Option.isNone(yield* store.file(bundle.digest, "service.json")))
          assert.isTrue(yield* store.has(kept.digest))
          // Discarding what is not there is nothing.
          yield* store.discard([bundle.digest])
          const again = yield* store.put(streamOfBytes(refused))
          assert.deepStrictEqual(again, { ...bundle, created: true })
          assert.isTrue(yield* store.has(bundle.digest))
        })
    )

    it.effect("an artifact above the 8 MiB part size streams through whole (multipart on S3)", () =>
      Effect.gen(function* () {
        const store = yield* Deployments.ArtifactStore
        const bytes = patternBytes(9 * 1024 * 1024 + 12_345, 7)
        bytes.set(unique("large"))
        const stored = yield* store.put(streamOfBytes(bytes, 64 * 1024))
        assert.deepStrictEqual(stored, { digest: sha256(bytes), bytes: bytes.byteLength, created: true })
        const back = yield* Stream.mkUint8Array(store.open(stored.digest))
        assert.strictEqual(sha256(back), stored.digest)
        const tail = yield* Stream.mkUint8Array(
          store.open(stored.digest, { offset: bytes.byteLength - 10, length: 10 })
        )
        assert.deepStrictEqual(tail, bytes.subarray(bytes.byteLength - 10))
      })
    )

    it.effect("a stream that fails fails with its error and commits nothing", () =>
      Effect.gen(function* () {
        const store = yield* Deployments.ArtifactStore
        const partial = unique("partial bytes")
        const error = yield* Effect.flip(store.put(Stream.concat(streamOfBytes(partial), Stream.fail(new Broken()))))
        assert.strictEqual(error._tag, "Broken")
        assert.isFalse(yield* store.has(sha256(partial)))
      })
    )

    it.effect("an interrupted put commits nothing", () =>
      Effect.gen(function* () {
        const store = yield* Deployments.ArtifactStore
        const start = unique("start")
        const fiber = yield* Effect.forkChild(store.put(Stream.concat(streamOfBytes(start), Stream.never)))
        yield* Effect.sleep("50 millis")
        yield* Fiber.interrupt(fiber)
        assert.isTrue(Exit.hasInterrupts(yield* Fiber.await(fiber)))
        assert.isFalse(yield* store.has(sha256(start)))
      })
    )

    it.effect("has is false for an unknown or malformed digest; open of an unknown digest does not succeed", () =>
      Effect.gen(function* () {
        const store = yield* Deployments.ArtifactStore
        assert.isFalse(yield* store.has(sha256(unique("never stored"))))
        assert.isFalse(yield* store.has("sha256:../../etc/passwd"))
        assert.isTrue(Exit.isFailure(yield* Effect.exit(Stream.runDrain(store.open(sha256(unique("never")))))))
      })
    )

    it.effect("open with a range streams only those bytes", () =>
      Effect.gen(function* () {
        const store = yield* Deployments.ArtifactStore
        const stored = yield* store.put(
          streamOfBytes(new Uint8Array([...text("0123456789".repeat(100_000)), ...unique("range")]), 4096)
        )
        assert.strictEqual(yield* collect(store.open(stored.digest, { offset: 3, length: 5 })), "34567")
        assert.strictEqual(yield* collect(store.open(stored.digest, { offset: 999_998, length: 2 })), "89")
        assert.strictEqual(yield* collect(store.open(stored.digest, { offset: 10, length: 0 })), "")
      })
    )

    it.effect("an index maps a bundle's paths to byte ranges of its inflated tar; file serves one path", () =>
      Effect.gen(function* () {
        const store = yield* Deployments.ArtifactStore
        const bundle = yield* store.put(streamOfBytes(unique("pretend this is a tar.gz")))
        const tar = yield* store.put(
          streamOfBytes(new Uint8Array([...text("....h1 { color: teal }....<h1>hi</h1>"), ...unique("tar")]))
        )
        assert.isTrue(Option.isNone(yield* store.index(bundle.digest)))
        const index: Deployments.BundleIndex = {
          tar: tar.digest,
          files: [
            { path: "assets/app.css", offset: 4, bytes: 18 },
            { path: "assets/index.html", offset: 26, bytes: 11 }
          ]
        }
        yield* store.putIndex(bundle.digest, index)
        assert.deepStrictEqual(yield* store.index(bundle.digest), Option.some(index))
        const found = Option.getOrThrow(yield* store.file(bundle.digest, "assets/index.html"))
        assert.strictEqual(found.path, "assets/index.html")
        assert.strictEqual(found.bytes, 11)
        assert.strictEqual(yield* collect(found.content), "<h1>hi</h1>")
        // Read twice: the second read may come from a local cache.
        assert.strictEqual(yield* collect(found.content), "<h1>hi</h1>")
        const css = Option.getOrThrow(yield* store.file(bundle.digest, "assets/app.css"))
        assert.strictEqual(yield* collect(css.content), "h1 { color: teal }")
        assert.isTrue(Option.isNone(yield* store.file(bundle.digest, "assets/missing.js")))
        assert.isTrue(Option.isNone(yield* store.file(sha256(unique("unknown bundle")), "assets/index.html")))
      })
    )

    it.effect("indexing a bundle again keeps the first index", () =>
      Effect.gen(function* () {
        const store = yield* Deployments.ArtifactStore
        const bundle = yield* store.put(streamOfBytes(unique("bundle")))
        const tar = yield* store.put(streamOfBytes(new Uint8Array([...text("ab"), ...unique("tar")])))
        const first: Deployments.BundleIndex = { tar: tar.digest, files: [{ path: "assets/a", offset: 0, bytes: 1 }] }
        yield* store.putIndex(bundle.digest, first)
        yield* store.putIndex(bundle.digest, { tar: tar.digest, files: [{ path: "assets/b", offset: 1, bytes: 1 }] })
        assert.deepStrictEqual(yield* store.index(bundle.digest), Option.some(first))
      })
    )
  })
