import { Context, Effect, Layer, Schema } from "effect"
import type { VerifiedIdentity } from "./User.ts"

/** Why a sign-in at the identity provider failed. */
export class IdentityProviderError extends Schema.TaggedError<IdentityProviderError>()("IdentityProviderError", {
  reason: Schema.Literals(["not_configured", "exchange_failed", "userinfo_failed", "unavailable"]),
  message: Schema.String
}) {}

/**
 * The external OAuth 2.0 identity provider (authorization code with PKCE). Always provided: a server without one
 * provides `IdentityProvider.off`, so a wiring mistake is a compile error rather than a sign-in that silently answers
 * "not configured".
 */
export class IdentityProvider extends Context.Service<
  IdentityProvider,
  {
    /** The provider name stored on users it signs in. */
    readonly id: string
    /** False for `off`: sign-in through a provider is not offered. */
    readonly enabled: boolean
    /** The provider's authorize page for this sign-in attempt. */
    readonly authorizeUrl: (input: {
      readonly state: string
      readonly codeChallenge: string
      readonly redirectUri: string
    }) => Effect.Effect<string, IdentityProviderError>
    /** Exchanges the code for tokens and reads the user's identity. */
    readonly exchange: (input: {
      readonly code: string
      readonly codeVerifier: string
      readonly redirectUri: string
    }) => Effect.Effect<VerifiedIdentity, IdentityProviderError>
  }
>()("@hostplane/core/identity/IdentityProvider") {
  /** No identity provider is configured: start answers 400 and no page offers the sign-in. */
  static readonly off = Layer.succeed(IdentityProvider, {
    id: "idp",
    enabled: false,
    authorizeUrl: () => Effect.fail(notConfigured),
    exchange: () => Effect.fail(notConfigured)
  })
}

const notConfigured = new IdentityProviderError({
  reason: "not_configured",
  message: "no identity provider is configured"
})
