import { Context, Effect, Schema } from "effect"

/**
 * A value sealed at rest: `keyId` names the ring key that sealed it, `ciphertext` is standard base64 (with padding)
 * of `nonce (12 bytes) || AES-256-GCM ciphertext || tag (16 bytes)`. Both fit in text columns.
 */
export const Sealed = Schema.Struct({ keyId: Schema.String, ciphertext: Schema.String })
export type Sealed = typeof Sealed.Type

/**
 * Why a sealed value did not open. Every reason means the stored data or the key ring is wrong, never the caller's
 * input, so services treat it as a defect (`Effect.orDie`).
 */
export class SealError extends Schema.TaggedError<SealError>()("SealError", {
  reason: Schema.Literals(["unknown_key", "malformed", "authentication_failed"]),
  keyId: Schema.String,
  message: Schema.String
}) {}

/** The additional authenticated data of a project secret, so a sealed value opens only as that secret. */
export const secretContext = (projectId: string, secretName: string): string => `${projectId}/${secretName}`

/**
 * Seals values at rest with a key ring: new values use the active key, values sealed by an older key of the ring
 * still open. `context` is bound as additional authenticated data, so a sealed value opens only with the same context.
 */
export class Sealer extends Context.Service<
  Sealer,
  {
    /** The key new values are sealed with; stored values with another `keyId` are due for resealing. */
    readonly activeKeyId: string
    /** Seals the UTF-8 bytes of `plaintext`; reject text that is not well-formed (`isWellFormed()`) before sealing. */
    readonly seal: (plaintext: string, context: string) => Effect.Effect<Sealed>
    readonly open: (sealed: Sealed, context: string) => Effect.Effect<string, SealError>
  }
>()("@hostplane/core/secrets/Sealer") {}
