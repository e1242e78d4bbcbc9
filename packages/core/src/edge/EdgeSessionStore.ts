import { Context, Effect, Option } from "effect"

/** A visitor's pass to a protected deployment on one hostname, set as a cookie by the edge. */
export interface EdgeSessionRow {
  readonly tokenHash: string
  readonly host: string
  readonly projectId: string
  /** The org member who exchanged an authorize code; null for a pass earned with the shared password. */
  readonly userId: string | null
  readonly expiresAt: string
  readonly createdAt: string
}

/** Edge sessions; only the SHA-256 of the cookie value is stored. */
export class EdgeSessionStore extends Context.Service<
  EdgeSessionStore,
  {
    readonly insert: (session: EdgeSessionRow) => Effect.Effect<void>
    /** The unexpired session for this cookie on this host. */
    readonly find: (tokenHash: string, host: string, now: string) => Effect.Effect<Option.Option<EdgeSessionRow>>
  }
>()("@hostplane/core/edge/EdgeSessionStore") {}
