import { OperationStore, TerminalCode } from "@hostplane/core/operations/Operation"
import { Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { Timestamp } from "../internal/Rows.ts"

const OperationRowSchema = Schema.Struct({
  id: Schema.String,
  kind: Schema.String,
  orgId: Schema.String,
  projectId: Schema.String,
  phase: Schema.String,
  terminalCode: Schema.NullOr(TerminalCode),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  attempts: Schema.Number,
  nextRunAt: Timestamp,
  lastError: Schema.NullOr(Schema.String)
})

/** `OperationStore` on PostgreSQL: runners claim due rows with `FOR UPDATE SKIP LOCKED` and lease them. */
export const layer = Layer.effect(
  OperationStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`id, kind, org_id, project_id, phase, terminal_code, created_at, updated_at, attempts,
      next_run_at, last_error`

    const get = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: OperationRowSchema,
      execute: (id) => sql`SELECT ${columns} FROM operations WHERE id = ${id}`
    })
    const findRunning = SqlSchema.findOneOption({
      Request: Schema.Struct({ projectId: Schema.String, kind: Schema.String }),
      Result: OperationRowSchema,
      execute: ({ projectId, kind }) => sql`SELECT ${columns} FROM operations
        WHERE project_id = ${projectId} AND kind = ${kind} AND terminal_code IS NULL LIMIT 1`
    })
    const claim = SqlSchema.findAll({
      Request: Schema.Struct({ now: Schema.String, leaseUntil: Schema.String, limit: Schema.Number }),
      Result: OperationRowSchema,
      execute: ({ now, leaseUntil, limit }) => sql`
        UPDATE operations o SET attempts = o.attempts + 1, next_run_at = ${leaseUntil}::timestamptz
        FROM (
          SELECT id FROM operations
          WHERE terminal_code IS NULL AND next_run_at <= ${now}::timestamptz
          ORDER BY next_run_at LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        ) due
        WHERE o.id = due.id
        RETURNING o.id, o.kind, o.org_id, o.project_id, o.phase, o.terminal_code, o.created_at, o.updated_at,
          o.attempts, o.next_run_at, o.last_error`
    })

    return OperationStore.of({
      insert: (row) =>
        sql`INSERT INTO operations (id, kind, org_id, project_id, phase, terminal_code, created_at, updated_at, attempts,
          next_run_at, last_error) VALUES (${row.id}, ${row.kind}, ${row.orgId}, ${row.projectId}, ${row.phase},
          ${row.terminalCode}, ${row.createdAt}::timestamptz, ${row.updatedAt}::timestamptz, ${row.attempts},
          ${row.nextRunAt}::timestamptz, ${row.lastError})`.pipe(Effect.asVoid, Effect.orDie),
      get: (id) => get(id).pipe(Effect.orDie),
      findRunning: (projectId, kind) => findRunning({ projectId, kind }).pipe(Effect.orDie),
      claim: (now, leaseUntil, limit) => claim({ now, leaseUntil, limit }).pipe(Effect.orDie),
      advance: (id, phase, at) =>
        sql`UPDATE operations SET phase = ${phase}, updated_at = ${at}::timestamptz WHERE id = ${id}`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      finish: (id, code, at) =>
        sql`UPDATE operations SET terminal_code = ${code}, updated_at = ${at}::timestamptz WHERE id = ${id}`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      retryLater: (id, error, nextRunAt, at) =>
        sql`UPDATE operations SET last_error = ${error}, next_run_at = ${nextRunAt}::timestamptz,
          updated_at = ${at}::timestamptz WHERE id = ${id}`.pipe(Effect.asVoid, Effect.orDie)
    })
  })
)
