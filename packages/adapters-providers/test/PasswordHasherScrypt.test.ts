import { assert, describe, it } from "@effect/vitest"
import { PasswordHasherScrypt } from "@hostplane/adapters-providers"
import { Access } from "@hostplane/core"
import { Effect } from "effect"

const hasher = PasswordHasherScrypt.make()
/**
 * For the rules that hold at any cost (verify, salts, normalization, tampering): scrypt at 2^10 instead of 2^15, 32
 * times less work per call. The default cost is hashed and verified by the tests that name it.
 */
const cheap = PasswordHasherScrypt.make({ logN: 10, r: 8, p: 1 })

const encodedPattern = /^\$scrypt\$ln=15,r=8,p=1\$([A-Za-z0-9+/]{22})\$([A-Za-z0-9+/]{43})$/

describe("PasswordHasherScrypt", () => {
  it.effect("hash is a self-describing PHC string: algorithm, parameters, 16-byte salt, 32-byte key", () =>
    Effect.gen(function* () {
      const encoded = yield* hasher.hash("correct horse battery")
      const match = encodedPattern.exec(encoded)
      assert.isNotNull(match, encoded)
      assert.strictEqual(Buffer.from(match![1]!, "base64").length, 16)
      assert.strictEqual(Buffer.from(match![2]!, "base64").length, 32)
      assert.notInclude(encoded, "correct horse")
    })
  )

  it.effect("verify is true for the password and false for any other", () =>
    Effect.gen(function* () {
      const encoded = yield* cheap.hash("correct horse battery")
      assert.isTrue(yield* cheap.verify("correct horse battery", encoded))
      for (const wrong of ["correct horse batter", "correct horse battery ", "Correct horse battery", ""]) {
        assert.isFalse(yield* cheap.verify(wrong, encoded), JSON.stringify(wrong))
      }
    })
  )

  it.effect("two hashes of one password differ (random salt) and both verify", () =>
    Effect.gen(function* () {
      const [a, b] = yield* Effect.all([cheap.hash("same password"), cheap.hash("same password")], {
        concurrency: 2
      })
      assert.notStrictEqual(a, b)
      assert.isTrue(yield* cheap.verify("same password", a))
      assert.isTrue(yield* cheap.verify("same password", b))
    })
  )

  it.effect("unicode passwords verify, in composed or decomposed form alike", () =>
    Effect.gen(function* () {
      const composed = "Pässwörd-🔑-密码"
      const encoded = yield* cheap.hash(composed)
      assert.isTrue(yield* cheap.verify(composed, encoded))
      assert.isTrue(yield* cheap.verify(composed.normalize("NFD"), encoded))
      assert.isFalse(yield* cheap.verify("Passwort-🔑-密码", encoded))
    })
  )

  it.effect("a hash made with other parameters still verifies, whatever the hasher's own cost", () =>
    Effect.gen(function* () {
      const cheap = PasswordHasherScrypt.make({ logN: 10, r: 8, p: 1 })
      const encoded = yield* cheap.hash("password1")
      assert.match(encoded, /^\$scrypt\$ln=10,r=8,p=1\$/)
      assert.isTrue(yield* hasher.verify("password1", encoded))
      assert.isFalse(yield* hasher.verify("password2", encoded))
    })
  )

  it.effect("malformed or tampered encodings never match", () =>
    Effect.gen(function* () {
      const encoded = yield* cheap.hash("password1")
      const [, , params, salt, key] = encoded.split("$") as [string, string, string, string, string]
      const flippedKey = Buffer.from(key, "base64")
      flippedKey[0] = flippedKey[0]! ^ 1
      const malformed = [
        "",
        "password1",
        "$scrypt$",
        `$argon2id$v=19$${params}$${salt}$${key}`,
        `$scrypt$${params}$${salt}`,
        `$scrypt$${params}$${salt}$${key}$`,
        `$scrypt$${params}$${salt}$${key}=`,
        `$scrypt$${params}$${salt}$${key.slice(0, -1)}`,
        `$scrypt$${params}$$${key}`,
        `$scrypt$${params}$${salt}$`,
        `$scrypt$ln=15,r=8$${salt}$${key}`,
        `$scrypt$ln=0,r=8,p=1$${salt}$${key}`,
        `$scrypt$ln=31,r=8,p=1$${salt}$${key}`,
        `$scrypt$ln=20,r=32,p=1$${salt}$${key}`,
        `$scrypt$ln=15,r=8,p=5$${salt}$${key}`,
        `$scrypt$ln=015,r=8,p=1$${salt}$${key}`,
        `$scrypt$ln=15,r=8,p=1$${salt}$${"A".repeat(8)}`,
        `$scrypt$ln=15,r=8,p=1$${salt.slice(0, 4)}$${key}`,
        `$scrypt$${params}$${salt}$${flippedKey.toString("base64").replace(/=+$/, "")}`,
        ` ${encoded}`,
        `${encoded}\n`,
        encoded.replace("$scrypt$", "$SCRYPT$")
      ]
      for (const candidate of malformed) {
        assert.isFalse(yield* cheap.verify("password1", candidate), JSON.stringify(candidate))
      }
      assert.isTrue(yield* cheap.verify("password1", encoded))
    })
  )

  it.effect("the layer provides the port with the default cost", () =>
    Effect.gen(function* () {
      const port = yield* Access.PasswordHasher
      const encoded = yield* port.hash("via the layer")
      assert.match(encoded, /^\$scrypt\$ln=15,r=8,p=1\$/)
      assert.isTrue(yield* port.verify("via the layer", encoded))
    }).pipe(Effect.provide(PasswordHasherScrypt.layer))
  )

  it.live("hashing runs off the event loop: a timer keeps firing during a hash", () =>
    Effect.gen(function* () {
      let ticks = 0
      const timer = setInterval(() => ticks++, 1)
      yield* hasher.hash("a password that takes a while")
      const seen = ticks
      clearInterval(timer)
      assert.isAbove(seen, 0)
    })
  )
})
