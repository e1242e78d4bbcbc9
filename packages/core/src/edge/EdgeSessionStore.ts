import { Context, Effect, Option, Schema } from "effect"
import { ProjectId, UserId } from "../kernel/Ids.ts"

/** A visitor's pass to a protected deployment on one hostname, set as a cookie by the edge. */
export const EdgeSessionRow = Schema.Struct({
  tokenHash: Schema.String,
  host: Schema.String,
  projectId: ProjectId,
  /** The org member who exchanged an authorize code; null for a pass earned with the shared password. */
  userId: Schema.NullOr(UserId),
  /** The password generation a shared-password pass was earned under; null for a member's pass. */
  passwordGeneration: Schema.NullOr(Schema.Int),
  expiresAt: Schema.String,
  createdAt: Schema.String
})
export type EdgeSessionRow = typeof EdgeSessionRow.Type

/** Edge sessions; only the SHA-256 of the cookie value is stored. */
export class EdgeSessionStore extends Context.Service<
  EdgeSessionStore,
  {
    readonly insert: (session: EdgeSessionRow) => Effect.Effect<void>
    /** The unexpired session for this cookie on this host. */
    readonly find: (tokenHash: string, host: string, now: string) => Effect.Effect<Option.Option<EdgeSessionRow>>
  }
>()("@hostplane/core/edge/EdgeSessionStore") {}
