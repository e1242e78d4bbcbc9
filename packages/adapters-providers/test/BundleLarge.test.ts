import { assert, describe, it } from "@effect/vitest"
import { ArtifactStoreDisk, BundleReader } from "@hostplane/adapters-providers"
import { Deployments } from "@hostplane/core"
import { type BundleEntry, bundleOf, generatedBundle, manifestEntry, streamOfBytes } from "@hostplane/testkit"
import { Effect, Option, Stream } from "effect"
import { filesUnder, tempDir } from "./support/TempFiles.ts"

const MiB = 1024 * 1024

/** The reader with decisions.md's limits over a fresh disk store. */
const setup = Effect.gen(function* () {
  const dir = yield* tempDir("large-bundles")
  const store = yield* ArtifactStoreDisk.make(dir)
  return { dir, store, reader: BundleReader.make(store) }
})

/** Runs `effect` while sampling the process RSS; answers its result and the peak growth over the start. */
const withPeakRss = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const before = process.memoryUsage.rss()
    let peak = before
    const timer = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss())
    }, 10)
    const result = yield* effect.pipe(Effect.ensuring(Effect.sync(() => clearInterval(timer))))
    return { result, growth: Math.max(peak, process.memoryUsage.rss()) - before }
  })

describe("BundleReader at the decided limits (decisions.md part 3)", () => {
  it.live(
    "memory stays flat: a 200 MiB (inflated) bundle streams through with RSS growth under 50 MiB",
    () =>
      Effect.gen(function* () {
        const { store, reader } = yield* setup
        const body = generatedBundle({ files: 4, fileBytes: 50 * MiB, content: "text", level: 1 })
        const { result: read, growth } = yield* withPeakRss(reader.read(body))
        assert.strictEqual(read.files, 5)
        assert.isAbove(read.uncompressedBytes, 200 * MiB)
        assert.isBelow(read.bytes, 5 * MiB)
        assert.isBelow(growth, 50 * MiB, `RSS grew by ${(growth / MiB).toFixed(1)} MiB`)
        const file = Option.getOrThrow(yield* store.file(read.digest, "assets/file-3.bin"))
        assert.strictEqual(file.bytes, 50 * MiB)
        const served = yield* Stream.runFold(
          file.content,
          () => 0,
          (n, chunk) => n + chunk.byteLength
        )
        assert.strictEqual(served, 50 * MiB)
      }),
    60_000
  )
  it.live(
    "a gzip bomb stops inflating at 500 MiB: 413 uncompressed_bytes, and nothing is stored",
    () =>
      Effect.gen(function* () {
        const { dir, reader } = yield* setup
        const body = generatedBundle({ files: 12, fileBytes: 50 * MiB, content: "text", level: 1 })
        const { result: error, growth } = yield* withPeakRss(Effect.flip(reader.read(body)))
        assert.strictEqual(error._tag, "PayloadTooLarge")
        assert.strictEqual(error.details?.["measure"], "uncompressed_bytes")
        assert.strictEqual(error.details?.["limit"], Deployments.BundleLimits.uncompressedBytes)
        assert.isBelow(growth, 50 * MiB, `RSS grew by ${(growth / MiB).toFixed(1)} MiB`)
        assert.deepStrictEqual(yield* filesUnder(dir), [])
      }),
    60_000
  )

  it.live(
    "a bundle above 100 MiB compressed is 413 compressed_bytes, and nothing is stored",
    () =>
      Effect.gen(function* () {
        const { dir, reader } = yield* setup
        const body = generatedBundle({ files: 1, fileBytes: 101 * MiB, content: "random", level: 0 })
        const { result: error, growth } = yield* withPeakRss(Effect.flip(reader.read(body)))
        assert.strictEqual(error._tag, "PayloadTooLarge")
        assert.strictEqual(error.details?.["measure"], "compressed_bytes")
        assert.strictEqual(error.details?.["limit"], Deployments.BundleLimits.compressedBytes)
        assert.isAbove(error.details?.["value"] as number, 100 * MiB)
        assert.isBelow(growth, 50 * MiB, `RSS grew by ${(growth / MiB).toFixed(1)} MiB`)
        assert.deepStrictEqual(yield* filesUnder(dir), [])
      }),
    60_000
  )

  it.live(
    "20,000 entries are accepted (and indexed) and 20,001 are 413 entries",
    () =>
      Effect.gen(function* () {
        const { dir, store, reader } = yield* setup
        const limit = Deployments.BundleLimits.entries
        const entries = Array.from({ length: limit - 1 }, (_, n): BundleEntry => ({
          name: `assets/d${n % 100}/f${n}.txt`,
          content: `file ${n}\n`
        }))
        const read = yield* reader.read(streamOfBytes(yield* bundleOf([manifestEntry(), ...entries])))
        assert.strictEqual(read.files, limit)
        const last = Option.getOrThrow(yield* store.file(read.digest, `assets/d98/f${limit - 2}.txt`))
        assert.strictEqual(Buffer.from(yield* Stream.mkUint8Array(last.content)).toString(), `file ${limit - 2}\n`)
        const stored = yield* filesUnder(dir)

        const over = yield* bundleOf([manifestEntry(), ...entries, { name: "assets/one-more.txt", content: "!" }])
        const error = yield* Effect.flip(reader.read(streamOfBytes(over)))
        assert.strictEqual(error._tag, "PayloadTooLarge")
        assert.deepStrictEqual(error.details, { measure: "entries", limit, value: limit + 1 })
        assert.deepStrictEqual(yield* filesUnder(dir), stored)
      }),
    60_000
  )
})
