import { assert, describe, it } from "@effect/vitest"
import { TokensNode } from "@hostplane/adapters-providers"
import { Kernel } from "@hostplane/core"
import { Effect } from "effect"

const sample = (layer: typeof TokensNode.layer) =>
  Effect.gen(function* () {
    const tokens = yield* Kernel.Tokens
    return {
      id: yield* tokens.id("usr"),
      secret: yield* tokens.secret(32),
      hashes: yield* Effect.forEach(["", "abc", "üñíçødé 🔑", "x".repeat(10_000)], tokens.hash)
    }
  }).pipe(Effect.provide(layer))

describe("TokensNode", () => {
  it.effect("hashes, ids and secrets have exactly the shapes of core's Web Crypto default", () =>
    Effect.gen(function* () {
      const native = yield* sample(TokensNode.layer)
      const web = yield* sample(Kernel.Tokens.layer)
      assert.deepStrictEqual(native.hashes, web.hashes)
      assert.strictEqual(native.hashes[1], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
      for (const { id, secret } of [native, web]) {
        assert.match(id, /^usr_[0-9a-hjkmnp-tv-z]{26}$/)
        assert.match(secret, /^[A-Za-z0-9_-]{43}$/)
      }
    })
  )
})
