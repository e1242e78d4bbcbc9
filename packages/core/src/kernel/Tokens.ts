import { Context, Effect, Layer } from "effect"

/**
 * Random ids, secret tokens and their one-way hashes; only hashes of secrets are ever stored. A port every host
 * provides: `Tokens.layer` (Web Crypto, any runtime) or a native one (node:crypto's faster hash).
 */
export class Tokens extends Context.Service<
  Tokens,
  {
    /** A prefixed random id such as `usr_...`. */
    readonly id: (prefix: string) => Effect.Effect<string>
    /** `bytes` random bytes, base64url. */
    readonly secret: (bytes?: number) => Effect.Effect<string>
    /** Hex SHA-256 of a secret, the form stored for lookups. */
    readonly hash: (secret: string) => Effect.Effect<string>
  }
>()("@hostplane/core/kernel/Tokens") {
  /** Web Crypto, which every supported runtime has as a global. */
  static readonly layer = Layer.sync(Tokens, () => webCryptoTokens)
}

const webCryptoTokens: Tokens["Service"] = {
  id: (prefix) => Effect.sync(() => `${prefix}_${base32(randomBytes(16))}`),
  secret: (bytes = 32) => Effect.sync(() => base64url(randomBytes(bytes))),
  hash: (secret) =>
    Effect.promise(() => globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(secret))).pipe(
      Effect.map((digest) => hex(new Uint8Array(digest)))
    )
}

const randomBytes = (n: number): Uint8Array => globalThis.crypto.getRandomValues(new Uint8Array(n))

const hex = (bytes: Uint8Array): string => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")

const base64url = (bytes: Uint8Array): string =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "")

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

/** Lowercase base32 without look-alike letters: the random part of every prefixed id. */
export const base32 = (bytes: Uint8Array): string => {
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
