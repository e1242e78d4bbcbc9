import { Kernel } from "@hostplane/core"
import { Effect, Layer } from "effect"
import { createHash, randomBytes } from "node:crypto"

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

/** Crockford-style base32 of `bytes`, lowercase: the same id shape as core's Web Crypto default. */
const base32 = (bytes: Uint8Array): string => {
  let out = ""
  let bits = 0
  let value = 0
  for (const byte of bytes) {
    value = (value << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31]
      bits -= 5
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31]
  return out
}

/** `Tokens` on node:crypto: the session-token hash runs on every request, and a synchronous SHA-256 is far cheaper. */
export const layer: Layer.Layer<Kernel.Tokens> = Layer.succeed(Kernel.Tokens, {
  id: (prefix) => Effect.sync(() => `${prefix}_${base32(randomBytes(16))}`),
  secret: (bytes = 32) => Effect.sync(() => randomBytes(bytes).toString("base64url")),
  hash: (secret) => Effect.sync(() => createHash("sha256").update(secret, "utf8").digest("hex"))
})
