import { Context, Effect, Schema } from "effect"
import type { VerifiedIdentity } from "./User.ts"

/** Why a sign-in at the identity provider failed. */
export class IdentityProviderError extends Schema.TaggedError<IdentityProviderError>()("IdentityProviderError", {
  reason: Schema.Literals(["not_configured", "exchange_failed", "userinfo_failed", "unavailable"]),
  message: Schema.String
}) {}

/** The external OAuth 2.0 identity provider (authorization code with PKCE). */
export class IdentityProvider extends Context.Service<
  IdentityProvider,
  {
    /** The provider name stored on users it signs in. */
    readonly id: string
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
>()("@hostplane/core/identity/IdentityProvider") {}
