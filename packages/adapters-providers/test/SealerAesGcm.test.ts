import { randomBytes } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { SealerAesGcm } from "@hostplane/adapters-providers"
import { Secrets } from "@hostplane/core"
import { ConfigProvider, Effect, Layer, Result } from "effect"
import { tempDir } from "./support/TempFiles.ts"

const key = () => new Uint8Array(randomBytes(32))
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

const sealerOf = (options: SealerAesGcm.Options) => Effect.orDie(SealerAesGcm.make(options))

const sealerFromEnv = (env: Record<string, string>) =>
  Effect.gen(function* () {
    return yield* Secrets.Sealer
  }).pipe(
    Effect.provide(SealerAesGcm.layerConfig.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env })))))
  )

const context = Secrets.secretContext("prj_a", "API_TOKEN")

describe("SealerAesGcm", () => {
  it.effect("a sealed value opens back to the same text under the same context", () =>
    Effect.gen(function* () {
      const sealer = yield* sealerOf({ keys: [{ id: "k1", key: key() }], activeKeyId: "k1" })
      const sealed = yield* sealer.seal("s3cr3t-value", context)
      assert.strictEqual(sealed.keyId, "k1")
      assert.strictEqual(sealer.activeKeyId, "k1")
      assert.notInclude(sealed.ciphertext, "s3cr3t")
      assert.match(sealed.ciphertext, /^[A-Za-z0-9+/]+={0,2}$/)
      assert.strictEqual(Buffer.from(sealed.ciphertext, "base64").length, 12 + "s3cr3t-value".length + 16)
      assert.strictEqual(yield* sealer.open(sealed, context), "s3cr3t-value")
    })
  )

  it.effect("unicode, the empty string and a 64 KiB value round-trip", () =>
    Effect.gen(function* () {
      const sealer = yield* sealerOf({ keys: [{ id: "k1", key: key() }], activeKeyId: "k1" })
      const big = "x".repeat(64 * 1024 - 3) + "€"
      for (const value of ["", "Grüße, 你好 🎉\u0000\n\ttabs", big]) {
        assert.strictEqual(yield* sealer.open(yield* sealer.seal(value, context), context), value)
      }
      assert.strictEqual(Buffer.byteLength(big, "utf8"), 64 * 1024)
    })
  )

  it.effect("sealing one value twice gives different ciphertexts (a fresh nonce each time)", () =>
    Effect.gen(function* () {
      const sealer = yield* sealerOf({ keys: [{ id: "k1", key: key() }], activeKeyId: "k1" })
      const a = yield* sealer.seal("same", context)
      const b = yield* sealer.seal("same", context)
      assert.notStrictEqual(a.ciphertext, b.ciphertext)
      assert.notStrictEqual(a.ciphertext.slice(0, 16), b.ciphertext.slice(0, 16))
    })
  )

  it.effect("a value cannot be moved to another secret: another context fails authentication", () =>
    Effect.gen(function* () {
      const sealer = yield* sealerOf({ keys: [{ id: "k1", key: key() }], activeKeyId: "k1" })
      const sealed = yield* sealer.seal("value", context)
      for (const other of [Secrets.secretContext("prj_a", "OTHER"), Secrets.secretContext("prj_b", "API_TOKEN"), ""]) {
        const error = yield* Effect.flip(sealer.open(sealed, other))
        assert.strictEqual(error._tag, "SealError")
        assert.strictEqual(error.reason, "authentication_failed")
        assert.strictEqual(error.keyId, "k1")
      }
    })
  )

  it.effect("a tampered nonce, body or tag fails authentication; a cut or non-base64 value is malformed", () =>
    Effect.gen(function* () {
      const sealer = yield* sealerOf({ keys: [{ id: "k1", key: key() }], activeKeyId: "k1" })
      const sealed = yield* sealer.seal("value to protect", context)
      const bytes = Buffer.from(sealed.ciphertext, "base64")
      for (const at of [0, 11, 12, 20, bytes.length - 16, bytes.length - 1]) {
        const flipped = Buffer.from(bytes)
        flipped[at] = flipped[at]! ^ 0x01
        const error = yield* Effect.flip(sealer.open({ ...sealed, ciphertext: flipped.toString("base64") }, context))
        assert.strictEqual(error.reason, "authentication_failed", `byte ${at}`)
      }
      const truncated = bytes.subarray(0, bytes.length - 1).toString("base64")
      assert.strictEqual(
        (yield* Effect.flip(sealer.open({ ...sealed, ciphertext: truncated }, context))).reason,
        "authentication_failed"
      )
      for (const ciphertext of ["", "AAAA", "not base64!", sealed.ciphertext.slice(0, -1)]) {
        const error = yield* Effect.flip(sealer.open({ ...sealed, ciphertext }, context))
        assert.strictEqual(error.reason, "malformed", JSON.stringify(ciphertext))
      }
    })
  )

  it.effect("rotation: after a new active key is added, values sealed with the old key still open", () =>
    Effect.gen(function* () {
      const old = key()
      const before = yield* sealerOf({ keys: [{ id: "k1", key: old }], activeKeyId: "k1" })
      const sealedOld = yield* before.seal("old value", context)

      const after = yield* sealerOf({
        keys: [
          { id: "k2", key: key() },
          { id: "k1", key: old }
        ],
        activeKeyId: "k2"
      })
      assert.strictEqual(after.activeKeyId, "k2")
      assert.strictEqual(yield* after.open(sealedOld, context), "old value")
      const sealedNew = yield* after.seal("new value", context)
      assert.strictEqual(sealedNew.keyId, "k2")
      assert.strictEqual(yield* after.open(sealedNew, context), "new value")

      const error = yield* Effect.flip(before.open(sealedNew, context))
      assert.strictEqual(error.reason, "unknown_key")
      assert.strictEqual(error.keyId, "k2")
    })
  )

  it.effect(
    "an unknown key id fails with unknown_key, and a key id swapped onto another key fails authentication",
    () =>
      Effect.gen(function* () {
        const sealer = yield* sealerOf({
          keys: [
            { id: "k1", key: key() },
            { id: "k2", key: key() }
          ],
          activeKeyId: "k1"
        })
        const sealed = yield* sealer.seal("value", context)
        const unknown = yield* Effect.flip(sealer.open({ ...sealed, keyId: "k9" }, context))
        assert.strictEqual(unknown.reason, "unknown_key")
        assert.strictEqual(unknown.keyId, "k9")
        const swapped = yield* Effect.flip(sealer.open({ ...sealed, keyId: "k2" }, context))
        assert.strictEqual(swapped.reason, "authentication_failed")
      })
  )

  it.effect("an unusable ring fails with a ConfigError that shows no key bytes", () =>
    Effect.gen(function* () {
      const short = new Uint8Array(16)
      const cases: Array<SealerAesGcm.Options> = [
        { keys: [], activeKeyId: "k1" },
        { keys: [{ id: "k1", key: key() }], activeKeyId: "k2" },
        { keys: [{ id: "k1", key: short }], activeKeyId: "k1" },
        {
          keys: [
            { id: "k1", key: key() },
            { id: "k1", key: key() }
          ],
          activeKeyId: "k1"
        },
        { keys: [{ id: "bad id:", key: key() }], activeKeyId: "bad id:" }
      ]
      for (const options of cases) {
        const error = yield* Effect.flip(SealerAesGcm.make(options))
        assert.strictEqual(error._tag, "ConfigError")
      }
    })
  )

  it("parseKeyRing: `<id>:<base64>` list with the first active, a bare key is k1, errors never echo the key", () => {
    const a = key()
    const b = key()
    const ring = SealerAesGcm.parseKeyRing(` new:${b64(b)} , old:${b64(a)} `)
    assert.isTrue(Result.isSuccess(ring))
    if (Result.isSuccess(ring)) {
      assert.strictEqual(ring.success.activeKeyId, "new")
      assert.deepStrictEqual(
        ring.success.keys.map((k) => [k.id, b64(k.key)]),
        [
          ["new", b64(b)],
          ["old", b64(a)]
        ]
      )
    }
    const bare = SealerAesGcm.parseKeyRing(`${b64(a)}\n`)
    assert.isTrue(Result.isSuccess(bare) && bare.success.activeKeyId === "k1")
    const urlSafe = SealerAesGcm.parseKeyRing(`k1:${Buffer.from(a).toString("base64url")}`)
    assert.isTrue(Result.isSuccess(urlSafe) && b64(urlSafe.success.keys[0]!.key) === b64(a))

    const shortKey = Buffer.from(randomBytes(16)).toString("base64")
    for (const bad of [
      "",
      " , ",
      `${b64(a)},${b64(b)}`,
      `k1:${shortKey}`,
      `k1:${b64(a)},k1:${b64(b)}`,
      `k1:${b64(a)}!`,
      `:${b64(a)}`,
      `k 1:${b64(a)}`
    ]) {
      const result = SealerAesGcm.parseKeyRing(bad)
      assert.isTrue(Result.isFailure(result), bad)
      if (Result.isFailure(result)) {
        assert.notInclude(result.failure, b64(a).slice(0, 12))
        assert.notInclude(result.failure, shortKey.slice(0, 12))
      }
    }
  })

  it.effect("layerConfig: SERVICE_SEAL_KEY is the ring, the first entry active, and no key file is written", () =>
    Effect.gen(function* () {
      const dataDir = yield* tempDir("seal")
      const a = key()
      const b = key()
      const old = yield* sealerOf({ keys: [{ id: "k1", key: a }], activeKeyId: "k1" })
      const sealedOld = yield* old.seal("before rotation", context)

      const sealer = yield* sealerFromEnv({ SERVICE_DATA_DIR: dataDir, SERVICE_SEAL_KEY: `k2:${b64(b)},k1:${b64(a)}` })
      assert.strictEqual(sealer.activeKeyId, "k2")
      assert.strictEqual(yield* sealer.open(sealedOld, context), "before rotation")
      assert.deepStrictEqual(yield* Effect.promise(() => Fs.readdir(dataDir)), [])

      const bare = yield* sealerFromEnv({ SERVICE_DATA_DIR: dataDir, SERVICE_SEAL_KEY: b64(a) })
      assert.strictEqual(bare.activeKeyId, "k1")
      assert.strictEqual(yield* bare.open(sealedOld, context), "before rotation")
    })
  )

  it.effect("layerConfig: a malformed SERVICE_SEAL_KEY fails the layer with a ConfigError that does not echo it", () =>
    Effect.gen(function* () {
      const dataDir = yield* tempDir("seal")
      const secretish = b64(key()).slice(0, 40)
      const error = yield* Effect.flip(
        sealerFromEnv({ SERVICE_DATA_DIR: dataDir, SERVICE_SEAL_KEY: `k1:${secretish}` })
      )
      assert.strictEqual(error._tag, "ConfigError")
      assert.include(error.message, "SERVICE_SEAL_KEY")
      assert.notInclude(error.message, secretish)
    })
  )

  it.effect("layerConfig default: <SERVICE_DATA_DIR>/seal.key is created once with mode 0600 and reused", () =>
    Effect.gen(function* () {
      const root = yield* tempDir("seal")
      const dataDir = Path.join(root, "data")
      const file = Path.join(dataDir, "seal.key")

      const first = yield* sealerFromEnv({ SERVICE_DATA_DIR: dataDir, SERVICE_SEAL_KEY: "  " })
      assert.strictEqual(first.activeKeyId, "k1")
      const stat = yield* Effect.promise(() => Fs.stat(file))
      assert.strictEqual(stat.mode & 0o777, 0o600)
      const text = yield* Effect.promise(() => Fs.readFile(file, "utf8"))
      assert.match(text, /^[A-Za-z0-9+/]{43}=\n$/)
      assert.strictEqual(Buffer.from(text.trim(), "base64").length, 32)
      assert.deepStrictEqual(yield* Effect.promise(() => Fs.readdir(dataDir)), ["seal.key"])

      const sealed = yield* first.seal("kept across restarts", context)
      const second = yield* sealerFromEnv({ SERVICE_DATA_DIR: dataDir })
      assert.strictEqual(yield* second.open(sealed, context), "kept across restarts")
      assert.strictEqual(yield* Effect.promise(() => Fs.readFile(file, "utf8")), text)

      const fromEnv = yield* sealerFromEnv({ SERVICE_DATA_DIR: dataDir, SERVICE_SEAL_KEY: text.trim() })
      assert.strictEqual(yield* fromEnv.open(sealed, context), "kept across restarts")
    })
  )

  it.effect("layerConfig default: processes starting together share one key file", () =>
    Effect.gen(function* () {
      const dataDir = yield* tempDir("seal")
      const sealers = yield* Effect.all(
        Array.from({ length: 8 }, () => sealerFromEnv({ SERVICE_DATA_DIR: dataDir })),
        { concurrency: "unbounded" }
      )
      const sealed = yield* sealers[0]!.seal("shared", context)
      for (const sealer of sealers) assert.strictEqual(yield* sealer.open(sealed, context), "shared")
      assert.deepStrictEqual(yield* Effect.promise(() => Fs.readdir(dataDir)), ["seal.key"])
    })
  )

  it.effect("layerConfig default: a malformed key file fails the layer and is never replaced", () =>
    Effect.gen(function* () {
      const dataDir = yield* tempDir("seal")
      const file = Path.join(dataDir, "seal.key")
      yield* Effect.promise(() => Fs.writeFile(file, "not a key\n", { mode: 0o600 }))
      const error = yield* Effect.flip(sealerFromEnv({ SERVICE_DATA_DIR: dataDir }))
      assert.strictEqual(error._tag, "ConfigError")
      assert.include(error.message, "seal.key")
      assert.strictEqual(yield* Effect.promise(() => Fs.readFile(file, "utf8")), "not a key\n")
    })
  )

  it.effect("layerEphemeral seals and opens with a fresh key", () =>
    Effect.gen(function* () {
      const sealer = yield* Secrets.Sealer
      assert.strictEqual(yield* sealer.open(yield* sealer.seal("x", context), context), "x")
    }).pipe(Effect.provide(SealerAesGcm.layerEphemeral))
  )
})
