import { MailOutbox, type OutboxRow } from "@hostplane/core/mail/Mail"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { NullableTimestamp, Timestamp } from "../internal/Rows.ts"

const OutboxRowSchema = Schema.Struct({
  id: Schema.String,
  from: Schema.String,
  to: Schema.String,
  subject: Schema.String,
  text: Schema.String,
  state: Schema.Literals(["queued", "sent", "failed", "cancelled"]),
  attempts: Schema.Number,
  nextAttemptAt: Timestamp,
  lastError: Schema.NullOr(Schema.String),
  sentAt: NullableTimestamp,
  createdAt: Timestamp
})

/**
 * `MailOutbox` on PostgreSQL. A claim takes due `queued` rows with `FOR UPDATE SKIP LOCKED` and, in the same
 * statement, counts the attempt and hides the row until `leaseUntil` by moving `next_attempt_at`.
 */
export const layer = Layer.effect(
  MailOutbox,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const columns = sql`id, from_address AS "from", to_address AS "to", subject, body AS "text", state, attempts,
      next_attempt_at, last_error, sent_at, created_at`

    const claim = SqlSchema.findAll({
      Request: Schema.Struct({ now: Schema.String, leaseUntil: Schema.String, limit: Schema.Number }),
      Result: OutboxRowSchema,
      execute: ({ now, leaseUntil, limit }) => sql`
        WITH due AS (
          SELECT id, next_attempt_at AS due_at FROM mail_outbox
          WHERE state = 'queued' AND next_attempt_at <= ${now}
          ORDER BY next_attempt_at, created_at, id
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        ), claimed AS (
          UPDATE mail_outbox m SET attempts = m.attempts + 1, next_attempt_at = ${leaseUntil}
          FROM due WHERE m.id = due.id
          RETURNING m.*, due.due_at
        )
        SELECT ${columns} FROM claimed ORDER BY due_at, created_at, id`
    })

    const get = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: OutboxRowSchema,
      execute: (id) => sql`SELECT ${columns} FROM mail_outbox WHERE id = ${id}`
    })

    return MailOutbox.of({
      enqueue: (message, createdAt) =>
        sql`
          INSERT INTO mail_outbox (id, from_address, to_address, subject, body, state, attempts, next_attempt_at, created_at)
          VALUES (${message.id}, ${message.from}, ${message.to}, ${message.subject}, ${message.text}, 'queued', 0,
            ${createdAt}, ${createdAt})`.pipe(Effect.asVoid, Effect.orDie),
      claim: (now, leaseUntil, limit) =>
        claim({ now, leaseUntil, limit: Math.max(limit, 0) }).pipe(
          Effect.map((rows): ReadonlyArray<OutboxRow> => rows),
          Effect.orDie
        ),
      // A row sent twice after an expired lease keeps its first `sent_at`.
      markSent: (id, sentAt) =>
        sql`
          UPDATE mail_outbox SET state = 'sent', sent_at = ${sentAt}, last_error = NULL
          WHERE id = ${id} AND state <> 'sent'`.pipe(Effect.asVoid, Effect.orDie),
      markFailed: (id, error, retryAt) =>
        Option.match(retryAt, {
          onNone: () =>
            sql`UPDATE mail_outbox SET state = 'failed', last_error = ${error} WHERE id = ${id} AND state = 'queued'`,
          onSome: (at) =>
            sql`UPDATE mail_outbox SET next_attempt_at = ${at}, last_error = ${error} WHERE id = ${id} AND state = 'queued'`
        }).pipe(Effect.asVoid, Effect.orDie),
      cancel: (id) =>
        sql`UPDATE mail_outbox SET state = 'cancelled' WHERE id = ${id} AND state = 'queued'`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      get: (id) => get(id).pipe(Effect.orDie)
    })
  })
)
