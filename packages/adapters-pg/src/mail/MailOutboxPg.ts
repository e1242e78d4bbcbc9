import { MailOutbox } from "@hostplane/core/mail/Mail"
import { Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { NullableTimestamp, Timestamp } from "../internal/Rows.ts"

const OutboxRowSchema = Schema.Struct({
  id: Schema.String,
  from: Schema.String,
  to: Schema.String,
  subject: Schema.String,
  text: Schema.String,
  state: Schema.Literals(["queued", "sent", "failed", "cancelled"]),
  lastError: Schema.NullOr(Schema.String),
  sentAt: NullableTimestamp,
  createdAt: Timestamp
})

/** `MailOutbox` on PostgreSQL: the message and its outcome; its `mail_send` job lives in `jobs`. */
export const layer = Layer.effect(
  MailOutbox,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const columns = sql`id, from_address AS "from", to_address AS "to", subject, body AS "text", state, last_error,
      sent_at, created_at`

    const get = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: OutboxRowSchema,
      execute: (id) => sql`SELECT ${columns} FROM mail_outbox WHERE id = ${id}`
    })

    return MailOutbox.of({
      enqueue: (message, createdAt) =>
        sql`
          INSERT INTO mail_outbox (id, from_address, to_address, subject, body, state, created_at)
          VALUES (${message.id}, ${message.from}, ${message.to}, ${message.subject}, ${message.text}, 'queued',
            ${createdAt})`.pipe(Effect.asVoid, Effect.orDie),
      // A row sent twice after an expired lease keeps its first `sent_at`.
      markSent: (id, sentAt) =>
        sql`
          UPDATE mail_outbox SET state = 'sent', sent_at = ${sentAt}, last_error = NULL
          WHERE id = ${id} AND state <> 'sent'`.pipe(Effect.asVoid, Effect.orDie),
      recordFailure: (id, error) =>
        sql`UPDATE mail_outbox SET last_error = ${error} WHERE id = ${id} AND state = 'queued'`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      markFailed: (id, error) =>
        sql`UPDATE mail_outbox SET state = 'failed', last_error = ${error} WHERE id = ${id} AND state = 'queued'`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      cancel: (id) =>
        sql`UPDATE mail_outbox SET state = 'cancelled' WHERE id = ${id} AND state = 'queued'`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      get: (id) => get(id).pipe(Effect.orDie)
    })
  })
)
