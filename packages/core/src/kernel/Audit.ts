import { Context, Effect, Schema } from "effect"

/** One audit row. Never holds secret values or contact data. */
export const AuditEvent = Schema.Struct({
  action: Schema.String,
  orgId: Schema.NullOr(Schema.String),
  actorId: Schema.NullOr(Schema.String),
  target: Schema.NullOr(Schema.String),
  data: Schema.Record(Schema.String, Schema.Unknown),
  at: Schema.String
})
export type AuditEvent = typeof AuditEvent.Type

/** Append-only audit log; `record` joins the ambient transaction of the change it describes. */
export class AuditLog extends Context.Service<
  AuditLog,
  {
    readonly record: (event: AuditEvent) => Effect.Effect<void>
    readonly list: (filter: {
      readonly orgId?: string
      readonly action?: string
    }) => Effect.Effect<ReadonlyArray<AuditEvent>>
  }
>()("@hostplane/core/kernel/AuditLog") {}
