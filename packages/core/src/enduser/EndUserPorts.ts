import { Context, Effect, Layer, type Option, type Redacted, Schema } from "effect"
import type { DatabaseConnect } from "../database/Database.ts"
import { IdentityProviderError } from "../identity/IdentityProvider.ts"
import type { VerifiedIdentity } from "../identity/User.ts"
import { portOff } from "../kernel/Port.ts"
import type { AuthProviderName } from "./EndUserAuth.ts"

/** The OAuth 2.0 clients of the social providers (code flow with PKCE S256), one per provider name. */
export class SocialOAuth extends Context.Service<
  SocialOAuth,
  {
    readonly authorizeUrl: (
      provider: AuthProviderName,
      input: {
        readonly clientId: string
        readonly state: string
        readonly codeChallenge: string
        readonly redirectUri: string
      }
    ) => Effect.Effect<string, IdentityProviderError>
    readonly exchange: (
      provider: AuthProviderName,
      input: {
        readonly clientId: string
        readonly clientSecret: Redacted.Redacted<string>
        readonly code: string
        readonly codeVerifier: string
        readonly redirectUri: string
      }
    ) => Effect.Effect<VerifiedIdentity, IdentityProviderError>
  }
>()("@hostplane/core/enduser/SocialOAuth") {
  /** No provider clients: the edge's sign-in paths answer 503 `auth_unavailable`. */
  static readonly off: Layer.Layer<SocialOAuth> = Layer.sync(SocialOAuth, () => {
    const refused = new IdentityProviderError({ reason: "not_configured", message: "no social sign-in on this node" })
    return portOff({ authorizeUrl: () => Effect.fail(refused), exchange: () => Effect.fail(refused) })
  })
}

/** An end user of a project, as the auth worker answers `/__service/auth/me`. */
export interface EndUser {
  readonly id: string
  readonly provider: string
  readonly subject: string
  readonly email: string | null
  readonly name: string | null
  readonly createdAt: string
}

/** The project's database could not be reached or refused a statement. */
export class EndUserDirectoryError extends Schema.TaggedError<EndUserDirectoryError>()("EndUserDirectoryError", {
  message: Schema.String
}) {}

/**
 * The end users and their sessions, kept in the project's own database (schema `service_auth`, created on first use).
 * Sessions are stored by the SHA-256 of their token only; expired ones are deleted as new ones are made.
 */
export class EndUserDirectory extends Context.Service<
  EndUserDirectory,
  {
    /** Finds or (when `allowSignups`) creates the user of this identity and opens a session; none when refused. */
    readonly signIn: (
      db: DatabaseConnect,
      identity: VerifiedIdentity,
      session: {
        readonly allowSignups: boolean
        readonly tokenHash: string
        readonly expiresAt: string
        readonly now: string
      }
    ) => Effect.Effect<Option.Option<EndUser>, EndUserDirectoryError>
    /** The user of a live session. */
    readonly session: (
      db: DatabaseConnect,
      tokenHash: string,
      now: string
    ) => Effect.Effect<Option.Option<EndUser>, EndUserDirectoryError>
    readonly signOut: (db: DatabaseConnect, tokenHash: string) => Effect.Effect<void, EndUserDirectoryError>
    /**
     * Removes the identities of `provider` made at or before `before` (a provider delete, spec 4.9); the users stay.
     * Answers how many went; a database where no one ever signed in is left as it is (no schema made).
     */
    readonly removeIdentities: (
      db: DatabaseConnect,
      provider: AuthProviderName,
      before: string
    ) => Effect.Effect<number, EndUserDirectoryError>
  }
>()("@hostplane/core/enduser/EndUserDirectory") {
  /**
   * No project databases reachable: the edge's sign-in answers 503 `auth_unavailable`, no end-user session is found,
   * and a provider delete's identities job stops with a warning.
   */
  static readonly off: Layer.Layer<EndUserDirectory> = Layer.sync(EndUserDirectory, () => {
    const refused = new EndUserDirectoryError({ message: "no end-user directory on this node" })
    return portOff({
      signIn: () => Effect.fail(refused),
      session: () => Effect.fail(refused),
      signOut: () => Effect.fail(refused),
      removeIdentities: () => Effect.fail(refused)
    })
  })
}
