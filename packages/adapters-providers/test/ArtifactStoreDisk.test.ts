import { randomBytes } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactStoreDisk } from "@hostplane/adapters-providers"
import { Deployments } from "@hostplane/core"
import { artifactStoreSuite, streamOfBytes } from "@hostplane/testkit"
import { ConfigProvider, Effect, Exit, Fiber, Layer, Option, Schema, Stream } from "effect"
import { filesUnder, sha256, tempDir } from "./support/TempFiles.ts"

const text = (value: string) => new TextEncoder().encode(value)
const collect = <E>(stream: Stream.Stream<Uint8Array, E>) =>
  Effect.map(Stream.mkUint8Array(stream), (bytes) => Buffer.from(bytes).toString("utf8"))

class Broken extends Schema.TaggedError<Broken>()("Broken", {}) {}

artifactStoreSuite("local folder", ArtifactStoreDisk.layerTemp)

describe("ArtifactStoreDisk", () => {
  it.effect("put streams bytes to <dir>/sha256/<2 hex>/<hex> and answers their sha256 digest and size", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("artifacts")
      const store = yield* ArtifactStoreDisk.make(dir)
      const bytes = text("hello artifacts\n".repeat(10_000))
      const stored = yield* store.put(streamOfBytes(bytes, 4096))
      assert.deepStrictEqual(stored, { digest: sha256(bytes), bytes: bytes.byteLength, created: true })
      const hex = stored.digest.slice("sha256:".length)
      assert.deepStrictEqual(yield* filesUnder(dir), [Path.join("sha256", hex.slice(0, 2), hex)])
      assert.isTrue(yield* store.has(stored.digest))
      assert.strictEqual(yield* collect(store.open(stored.digest)), "hello artifacts\n".repeat(10_000))
    })
  )

  it.effect("a put many early flushes long is stored byte for byte under its digest", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("artifacts")
      const store = yield* ArtifactStoreDisk.make(dir)
      // 20 MiB in 64 KiB reads: several flushes run while later batches are written.
      const bytes = new Uint8Array(randomBytes(20 * 1024 * 1024))
      const stored = yield* store.put(streamOfBytes(bytes, 64 * 1024))
      assert.deepStrictEqual(stored, { digest: sha256(bytes), bytes: bytes.byteLength, created: true })
      const read = yield* Stream.mkUint8Array(store.open(stored.digest))
      assert.isTrue(Buffer.from(read).equals(Buffer.from(bytes)))
      assert.deepStrictEqual(
        (yield* filesUnder(dir)).filter((file) => file.startsWith("tmp")),
        [],
        "no temporary file is left"
      )
    })
  )

  it.effect("an early flush that fails fails the writer's end, even when the disk recovers before it", () =>
    Effect.gen(function* () {
      // Linux reports a write-back error to a file once: the final fsync would not see it again.
      const written: Array<number> = []
      let flushes = 0
      const file: ArtifactStoreDisk.WritableFile = {
        writev: (async (chunks: ReadonlyArray<Uint8Array>) => {
          const bytes = chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0)
          written.push(bytes)
          return { bytesWritten: bytes, buffers: chunks }
        }) as ArtifactStoreDisk.WritableFile["writev"],
        write: (async () => {
          throw new Error("short writes are not expected here")
        }) as ArtifactStoreDisk.WritableFile["write"],
        datasync: async () => {
          flushes += 1
          if (flushes === 1) throw new Error("EIO: write-back failed")
        }
      }
      const writer = ArtifactStoreDisk.batchedWriter(file)
      const chunk = new Uint8Array(1024 * 1024)
      for (let index = 0; index < 20; index++) yield* writer.add([chunk])
      const exit = yield* Effect.exit(writer.end)
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(
        written.reduce((sum, bytes) => sum + bytes, 0),
        20 * 1024 * 1024,
        "every byte was still written"
      )
      assert.strictEqual(flushes, 2, "the second flush succeeded")
    })
  )

  it.effect("the same bytes put twice are stored once under one digest", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("artifacts")
      const store = yield* ArtifactStoreDisk.make(dir)
      const first = yield* store.put(streamOfBytes(text("same"), 1))
      const second = yield* store.put(streamOfBytes(text("same"), 3))
      assert.deepStrictEqual(first, { ...second, created: true })
      assert.isFalse(second.created)
      assert.strictEqual((yield* filesUnder(dir)).length, 1)
    })
  )

  it.effect("concurrent puts of the same bytes leave one blob and no temporary files", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("artifacts")
      const store = yield* ArtifactStoreDisk.make(dir)
      const bytes = text("x".repeat(200_000))
      const results = yield* Effect.all(
        Array.from({ length: 8 }, () => store.put(streamOfBytes(bytes, 1000))),
        { concurrency: "unbounded" }
      )
      assert.isTrue(results.every((result) => result.digest === sha256(bytes)))
      assert.strictEqual((yield* filesUnder(dir)).length, 1)
    })
  )

  it.effect("a stream that fails commits nothing and leaves no temporary file", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("artifacts")
      const store = yield* ArtifactStoreDisk.make(dir)
      const failing = Stream.concat(streamOfBytes(text("partial bytes")), Stream.fail(new Broken()))
      const error = yield* Effect.flip(store.put(failing))
      assert.strictEqual(error._tag, "Broken")
      assert.deepStrictEqual(yield* filesUnder(dir), [])
      assert.isFalse(yield* store.has(sha256(text("partial bytes"))))
    })
  )

  it.effect("an interrupted put commits nothing and leaves no temporary file", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("artifacts")
      const store = yield* ArtifactStoreDisk.make(dir)
      const endless = Stream.concat(streamOfBytes(text("start")), Stream.never)
      const fiber = yield* Effect.forkChild(store.put(endless))
      for (let tries = 0; tries < 200 && (yield* filesUnder(Path.join(dir, "tmp"))).length === 0; tries++) {
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
      }
      assert.strictEqual((yield* filesUnder(Path.join(dir, "tmp"))).length, 1, "the temporary object exists mid-put")
      yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.hasInterrupts(yield* Fiber.await(fiber)))
      assert.deepStrictEqual(yield* filesUnder(dir), [])
    })
  )

  it.effect("has is false for an unknown or malformed digest; open of an unknown digest dies", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("artifacts")
      const store = yield* ArtifactStoreDisk.make(dir)
      assert.isFalse(yield* store.has(sha256(text("never stored"))))
      assert.isFalse(yield* store.has("sha256:../../etc/passwd"))
      const exit = yield* Effect.exit(Stream.runDrain(store.open(sha256(text("never stored")))))
      assert.isTrue(Exit.hasDies(exit))
      assert.isTrue(Exit.hasDies(yield* Effect.exit(Stream.runDrain(store.open("sha256:../x")))))
    })
  )

  it.effect("open with a range streams only those bytes", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("artifacts")
      const store = yield* ArtifactStoreDisk.make(dir)
      const stored = yield* store.put(streamOfBytes(text("0123456789".repeat(100_000)), 4096))
      assert.strictEqual(yield* collect(store.open(stored.digest, { offset: 3, length: 5 })), "34567")
      assert.strictEqual(yield* collect(store.open(stored.digest, { offset: 999_998, length: 2 })), "89")
      assert.strictEqual(yield* collect(store.open(stored.digest, { offset: 10, length: 0 })), "")
    })
  )

  it.effect("an index maps a bundle's paths to byte ranges of its inflated tar; file serves one path", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("artifacts")
      const store = yield* ArtifactStoreDisk.make(dir)
      const bundle = yield* store.put(streamOfBytes(text("pretend this is a tar.gz")))
      const tar = yield* store.put(streamOfBytes(text("....h1 { color: teal }....<h1>hi</h1>")))
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
      const css = Option.getOrThrow(yield* store.file(bundle.digest, "assets/app.css"))
      assert.strictEqual(yield* collect(css.content), "h1 { color: teal }")
      assert.isTrue(Option.isNone(yield* store.file(bundle.digest, "assets/missing.js")))
      assert.isTrue(Option.isNone(yield* store.file(sha256(text("unknown bundle")), "assets/index.html")))
    })
  )

  it.effect("indexing a bundle again keeps the first index, also for a store opened later", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("artifacts")
      const store = yield* ArtifactStoreDisk.make(dir)
      const bundle = yield* store.put(streamOfBytes(text("bundle")))
      const tar = yield* store.put(streamOfBytes(text("ab")))
      const first: Deployments.BundleIndex = { tar: tar.digest, files: [{ path: "assets/a", offset: 0, bytes: 1 }] }
      yield* store.putIndex(bundle.digest, first)
      yield* store.putIndex(bundle.digest, { tar: tar.digest, files: [{ path: "assets/b", offset: 1, bytes: 1 }] })
      const reopened = yield* ArtifactStoreDisk.make(dir)
      assert.deepStrictEqual(yield* reopened.index(bundle.digest), Option.some(first))
      assert.deepStrictEqual(
        (yield* filesUnder(dir)).filter((file) => file.startsWith("tmp")),
        [],
        "no temporary file is left"
      )
    })
  )

  it.effect("layerConfig keeps artifacts under <SERVICE_DATA_DIR>/artifacts", () =>
    Effect.gen(function* () {
      const dataDir = yield* tempDir("artifacts")
      const stored = yield* Effect.gen(function* () {
        const store = yield* Deployments.ArtifactStore
        return yield* store.put(streamOfBytes(text("configured")))
      }).pipe(
        Effect.provide(
          ArtifactStoreDisk.layerConfig.pipe(
            Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { SERVICE_DATA_DIR: dataDir } })))
          )
        )
      )
      const hex = stored.digest.slice("sha256:".length)
      assert.deepStrictEqual(yield* filesUnder(dataDir), [Path.join("artifacts", "sha256", hex.slice(0, 2), hex)])
    })
  )

  it.effect("dirConfig defaults to .hostplane/artifacts in the working directory", () =>
    Effect.gen(function* () {
      const dir = yield* ArtifactStoreDisk.dirConfig.pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: {} })))
      )
      assert.strictEqual(dir, Path.resolve(".hostplane", "artifacts"))
    })
  )

  it.effect(
    "a store opened over a folder a killed process left removes its tmp/*.part files and keeps every artifact",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir("artifacts")
        const first = yield* ArtifactStoreDisk.make(dir)
        const stored = yield* first.put(streamOfBytes(text("kept")))
        // What a process killed in the middle of two uploads leaves behind.
        yield* Effect.promise(async () => {
          await Fs.writeFile(Path.join(dir, "tmp", "0b7c-killed.part"), "half a bundle")
          await Fs.writeFile(Path.join(dir, "tmp", "9f1e-killed.part"), "half an index")
        })
        assert.strictEqual((yield* filesUnder(Path.join(dir, "tmp"))).length, 2)
        const reopened = yield* ArtifactStoreDisk.make(dir)
        assert.deepStrictEqual(yield* filesUnder(Path.join(dir, "tmp")), [])
        assert.strictEqual(yield* collect(reopened.open(stored.digest)), "kept")
      })
  )
})
