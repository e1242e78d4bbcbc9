import { createHash } from "node:crypto"
import { assert, layer } from "@effect/vitest"
import { Database } from "@hostplane/core"
import { Effect, type Layer, Schema, Stream } from "effect"
import { randomSuffix } from "../contract/Fixtures.ts"
import { patternBytes } from "../deployments/BundleFixtures.ts"
import { streamOfBytes } from "../deployments/BundleFixtures.ts"

class Broken extends Schema.TaggedError<Broken>()("Broken", {}) {}

const text = (value: string) => new TextEncoder().encode(value)
const hex = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

/** The `BackupStore` contract: every adapter (memory, the local folder, an S3 bucket) must pass it. */
export const backupStoreSuite = <E>(name: string, backups: Layer.Layer<Database.BackupStore, E>): void =>
  layer(backups, { timeout: 120_000 })(`${name}: BackupStore contract`, (it) => {
    it.effect("put streams an image in and answers its size and sha256; read and digest give them back", () =>
      Effect.gen(function* () {
        const store = yield* Database.BackupStore
        const key = `prj_${randomSuffix()}/1-1-abc.tar.gz`
        const bytes = text("base backup ".repeat(50_000))
        assert.deepStrictEqual(yield* store.put(key, streamOfBytes(bytes, 8192)), {
          bytes: bytes.byteLength,
          sha256: hex(bytes)
        })
        assert.deepStrictEqual(yield* Stream.mkUint8Array(store.read(key)), bytes)
        assert.deepStrictEqual(yield* store.digest(key), { bytes: bytes.byteLength, sha256: hex(bytes) })
      })
    )

    it.effect("an image above the 8 MiB part size streams through whole (multipart on S3)", () =>
      Effect.gen(function* () {
        const store = yield* Database.BackupStore
        const key = `prj_${randomSuffix()}/1-2-big.tar.gz`
        const bytes = patternBytes(9 * 1024 * 1024 + 777, 13)
        assert.deepStrictEqual(yield* store.put(key, streamOfBytes(bytes)), {
          bytes: bytes.byteLength,
          sha256: hex(bytes)
        })
        assert.deepStrictEqual(yield* store.digest(key), { bytes: bytes.byteLength, sha256: hex(bytes) })
      })
    )

    it.effect("exports are kept under their `exports/` keys like generations", () =>
      Effect.gen(function* () {
        const store = yield* Database.BackupStore
        const key = `exports/prj_${randomSuffix()}/2031-01-01T00-00-00-000Z-abc.tar.gz`
        yield* store.put(key, streamOfBytes(text("export image")))
        assert.strictEqual(new TextDecoder().decode(yield* Stream.mkUint8Array(store.read(key))), "export image")
        yield* store.remove(key)
        assert.isUndefined(yield* store.digest(key))
      })
    )

    it.effect("a put whose image fails fails with its error and keeps what the key held", () =>
      Effect.gen(function* () {
        const store = yield* Database.BackupStore
        const key = `prj_${randomSuffix()}/1-3-x.tar.gz`
        yield* store.put(key, streamOfBytes(text("whole image")))
        const error = yield* Effect.flip(
          store.put(key, Stream.concat(streamOfBytes(text("half an ima")), Stream.fail(new Broken())))
        )
        assert.strictEqual(error._tag, "Broken")
        assert.deepStrictEqual(yield* store.digest(key), { bytes: 11, sha256: hex(text("whole image")) })
        const fresh = `prj_${randomSuffix()}/1-4-y.tar.gz`
        yield* Effect.flip(store.put(fresh, Stream.concat(streamOfBytes(text("half")), Stream.fail(new Broken()))))
        assert.isUndefined(yield* store.digest(fresh))
      })
    )

    it.effect("digest of an absent key is undefined; remove of it is nothing; read of it fails", () =>
      Effect.gen(function* () {
        const store = yield* Database.BackupStore
        const key = `prj_${randomSuffix()}/9-9-gone.tar.gz`
        assert.isUndefined(yield* store.digest(key))
        yield* store.remove(key)
        const error = yield* Effect.flip(Stream.runDrain(store.read(key)))
        assert.strictEqual(error._tag, "BackupStoreError")
        yield* store.put(key, streamOfBytes(text("x")))
        yield* store.remove(key)
        assert.isUndefined(yield* store.digest(key))
      })
    )
  })
