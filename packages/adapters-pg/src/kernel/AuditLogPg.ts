import { AuditEvent, AuditLog } from "@hostplane/core/kernel/Audit"
import { Effect, Layer, Schema } from "effect"
import { type SqlClient as Client, SqlClient, SqlSchema, type Statement } from "effect/sql"
import { Timestamp } from "../internal/Rows.ts"

const AuditRow = Schema.Struct({ ...AuditEvent.fields, at: Timestamp })

const Filter = Schema.Struct({ orgId: Schema.optionalKey(Schema.String), action: Schema.optionalKey(Schema.String) })

/** The insert of one audit row; `EnvelopeStorePg.finish` runs it beside the node revision raise. */
export const insertAudit = (sql: Client.SqlClient, event: AuditEvent) => sql`
  INSERT INTO audit_events (action, org_id, actor_id, target, data, at)
  VALUES (${event.action}, ${event.orgId}, ${event.actorId}, ${event.target}, ${JSON.stringify(event.data)}::jsonb,
    ${event.at})`

/** The same insert as a row selected from `source` (a CTE): no row there, no audit row. */
export const insertAuditFrom = (sql: Client.SqlClient, event: AuditEvent, source: Statement.Fragment) => sql`
  INSERT INTO audit_events (action, org_id, actor_id, target, data, at)
  SELECT ${event.action}::text, ${event.orgId}::text, ${event.actorId}::text, ${event.target}::text,
    ${JSON.stringify(event.data)}::jsonb, ${event.at}::timestamptz FROM ${source}`

/** `AuditLog` on PostgreSQL: rows are only ever inserted, in the caller's transaction, and listed oldest first. */
export const layer = Layer.effect(
  AuditLog,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const list = SqlSchema.findAll({
      Request: Filter,
      Result: AuditRow,
      execute: (filter) => sql`
        SELECT action, org_id, actor_id, target, data, at FROM audit_events
        WHERE ${sql.and([
          filter.orgId === undefined ? sql`true` : sql`org_id = ${filter.orgId}`,
          filter.action === undefined ? sql`true` : sql`action = ${filter.action}`
        ])}
        ORDER BY seq`
    })

    return AuditLog.of({
      record: (event) => insertAudit(sql, event).pipe(Effect.asVoid, Effect.orDie),
      list: (filter) => list(filter).pipe(Effect.orDie)
    })
  })
)
