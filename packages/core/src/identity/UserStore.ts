import { Context, Effect, Option, Schema } from "effect"
import type { User } from "./User.ts"
import { UserId } from "../kernel/Ids.ts"
import type { MembershipRow } from "../orgs/OrgStore.ts"

export const SessionRow = Schema.Struct({
  tokenHash: Schema.String,
  userId: UserId,
  expiresAt: Schema.String,
  createdAt: Schema.String
})
export type SessionRow = typeof SessionRow.Type

/** Pending OAuth sign-in: single use, bound to the client redirect, holding the PKCE verifier. */
export const OAuthStateRow = Schema.Struct({
  stateHash: Schema.String,
  redirect: Schema.String,
  codeVerifier: Schema.String,
  expiresAt: Schema.String
})
export type OAuthStateRow = typeof OAuthStateRow.Type

/** What an authenticated request needs, read at once: the session's user, its end, the user's memberships. */
export interface SessionPrincipal {
  readonly user: User
  readonly expiresAt: string
  /** As `OrgStore.membershipsOf` answers them. */
  readonly memberships: ReadonlyArray<MembershipRow>
}

/** Users, sessions and OAuth states. A user is unique by provider plus subject. */
export class UserStore extends Context.Service<
  UserStore,
  {
    readonly findByIdentity: (provider: string, subject: string) => Effect.Effect<Option.Option<User>>
    readonly findById: (userId: UserId) => Effect.Effect<Option.Option<User>>
    /** Inserts the user, or returns the existing one for the same provider and subject. */
    readonly insert: (
      user: User,
      createdAt: string
    ) => Effect.Effect<{ readonly user: User; readonly created: boolean }>
    readonly updateProfile: (
      userId: UserId,
      profile: { readonly email: string | null; readonly name: string | null }
    ) => Effect.Effect<void>
    readonly insertSession: (session: SessionRow) => Effect.Effect<void>
    /** The session's user while the session is unexpired at `now`. */
    readonly findSession: (tokenHash: string, now: string) => Effect.Effect<Option.Option<User>>
    /** `findSession` with the session's end and the user's memberships, in one round trip. */
    readonly findPrincipal: (tokenHash: string, now: string) => Effect.Effect<Option.Option<SessionPrincipal>>
    readonly insertOAuthState: (state: OAuthStateRow) => Effect.Effect<void>
    /** Removes and returns the state: a second take of the same state finds nothing. */
    readonly takeOAuthState: (stateHash: string) => Effect.Effect<Option.Option<OAuthStateRow>>
  }
>()("@hostplane/core/identity/UserStore") {}
