import { EmailStore } from "@hostplane/core/email/EmailStore"
import { MailDirection, MailOutcome } from "@hostplane/core/email/Email"
import { EmailAddressTaken } from "@hostplane/core/errors/Errors"
import { MailId, ProjectId } from "@hostplane/core/kernel/Ids"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { onUniqueViolation, Timestamp } from "../internal/Rows.ts"
import { transaction } from "../internal/Transaction.ts"

const AddressRow = Schema.Struct({ projectId: ProjectId, address: Schema.String, granted: Schema.Boolean })

const LogRow = Schema.Struct({
  id: MailId,
  projectId: ProjectId,
  direction: MailDirection,
  mailFrom: Schema.String,
  mailTo: Schema.String,
  subject: Schema.String,
  outcome: MailOutcome,
  size: Schema.Number,
  spf: Schema.NullOr(Schema.String),
  raw: Schema.NullOr(Schema.Uint8Array),
  providerMessageId: Schema.NullOr(Schema.String),
  createdAt: Timestamp
})

const toEntry = ({ mailFrom, mailTo, ...row }: typeof LogRow.Type) => ({
  ...row,
  from: mailFrom,
  to: mailTo,
  hasRaw: row.raw !== null
})

/** `EmailStore` on PostgreSQL: a notification claim is an insert on the SNS id's primary key. */
export const layer = Layer.effect(
  EmailStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const findAddress = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: AddressRow,
      execute: (address) => sql`SELECT project_id, address, granted FROM email_addresses WHERE address = ${address}`
    })
    const addressOf = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: AddressRow,
      execute: (projectId) =>
        sql`SELECT project_id, address, granted FROM email_addresses WHERE project_id = ${projectId}`
    })
    const getLog = SqlSchema.findOneOption({
      Request: Schema.Struct({ projectId: Schema.String, id: Schema.String }),
      Result: LogRow,
      execute: ({ projectId, id }) =>
        sql`SELECT id, project_id, direction, mail_from, mail_to, subject, outcome, size, spf, raw,
              provider_message_id, created_at
            FROM mail_log WHERE id = ${id} AND project_id = ${projectId} AND NOT pending`
    })

    const listLog = SqlSchema.findAll({
      Request: Schema.Struct({
        projectId: Schema.String,
        direction: Schema.NullOr(Schema.String),
        afterAt: Schema.NullOr(Schema.String),
        afterId: Schema.String,
        limit: Schema.Number
      }),
      Result: LogRow,
      execute: ({ projectId, direction, afterAt, afterId, limit }) =>
        sql`SELECT id, project_id, direction, mail_from, mail_to, subject, outcome, size, spf, raw,
              provider_message_id, created_at
            FROM mail_log
            WHERE project_id = ${projectId} AND NOT pending
              AND (${direction}::text IS NULL OR direction = ${direction})
              AND (${afterAt}::timestamptz IS NULL OR (created_at, id COLLATE "C") < (${afterAt}::timestamptz, ${afterId}))
            ORDER BY created_at DESC, id COLLATE "C" DESC
            LIMIT ${limit}`
    })

    const countSince = SqlSchema.findOne({
      Request: Schema.Struct({ projectId: Schema.String, since: Schema.String }),
      Result: Schema.Struct({ sent: Schema.Number, received: Schema.Number }),
      execute: ({ projectId, since }) =>
        sql`SELECT count(*) FILTER (WHERE direction = 'out')::int AS sent,
              count(*) FILTER (WHERE direction = 'in')::int AS received
            FROM mail_log WHERE project_id = ${projectId} AND created_at >= ${since}::timestamptz AND NOT pending`
    })

    return EmailStore.of({
      countSince: (projectId, since) => countSince({ projectId, since }).pipe(Effect.orDie),
      purgeLog: (cutoffs) =>
        sql`DELETE FROM mail_log m USING projects p, orgs o
            WHERE m.project_id = p.id AND p.org_id = o.id
              AND m.created_at < CASE WHEN o.plan = 'pro' THEN ${cutoffs.pro}::timestamptz
                                      ELSE ${cutoffs.free}::timestamptz END
            RETURNING m.id`.pipe(
          Effect.map((rows) => rows.length),
          Effect.orDie
        ),
      listLog: (projectId, query) =>
        listLog({
          projectId,
          direction: query.direction ?? null,
          afterAt: query.after?.createdAt ?? null,
          afterId: query.after?.id ?? "",
          limit: query.limit
        }).pipe(
          Effect.map((rows) => rows.map(toEntry)),
          Effect.orDie
        ),
      saveAddress: (row) =>
        sql`INSERT INTO email_addresses (project_id, address, granted)
            VALUES (${row.projectId}, ${row.address}, ${row.granted})
            ON CONFLICT (project_id) DO UPDATE SET address = EXCLUDED.address, granted = EXCLUDED.granted`.pipe(
          Effect.asVoid,
          onUniqueViolation(sql, "email_addresses_address_key", () => "taken" as const),
          Effect.orDie,
          Effect.flatMap((outcome) =>
            outcome === "taken"
              ? Effect.fail(new EmailAddressTaken({ message: `${row.address} is held by another project` }))
              : Effect.void
          )
        ),
      addressOf: (projectId) => addressOf(projectId).pipe(Effect.orDie),
      findAddress: (address) => findAddress(address).pipe(Effect.orDie),
      claimNotification: (messageId, type, at) =>
        sql`INSERT INTO mail_notifications (message_id, type, received_at)
            VALUES (${messageId}, ${type}, ${at}::timestamptz)
            ON CONFLICT (message_id) DO NOTHING RETURNING message_id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),
      insertLog: (row) =>
        sql`INSERT INTO mail_log (id, project_id, direction, mail_from, mail_to, subject, outcome, size, spf, raw,
              provider_message_id, created_at)
            VALUES (${row.id}, ${row.projectId}, ${row.direction}, ${row.from}, ${row.to}, ${row.subject},
              ${row.outcome}, ${row.size}, ${row.spf}, ${row.raw === null ? null : Buffer.from(row.raw)},
              ${row.providerMessageId}, ${row.createdAt}::timestamptz)`.pipe(Effect.asVoid, Effect.orDie),
      reserveOut: (row, limit) =>
        transaction(sql)(
          Effect.gen(function* () {
            // The address row's lock serializes a project's sends (and a revoke) until the insert commits.
            const address = yield* sql<{ granted: boolean }>`
                SELECT granted FROM email_addresses WHERE project_id = ${row.projectId} FOR UPDATE`
            if (address[0]?.granted !== true) return "not_granted" as const
            // The count and the insert in one statement, after the lock: its snapshot is taken once the lock is
            // held, so it sees every row the previous holder committed (one round trip less under the lock). Held
            // rows whose lease ended (their process died mid-send) neither count nor stay.
            const inserted = yield* sql`
                WITH released AS (
                  DELETE FROM mail_log
                  WHERE project_id = ${row.projectId} AND pending
                    AND (lease_until IS NULL OR lease_until <= ${limit.now}::timestamptz)
                )
                INSERT INTO mail_log (id, project_id, direction, mail_from, mail_to, subject, outcome, size, spf, raw,
                  provider_message_id, created_at, pending, lease_until)
                SELECT ${row.id}, ${row.projectId}, ${row.direction}, ${row.from}, ${row.to}, ${row.subject},
                  ${row.outcome}, ${row.size}, ${row.spf}, ${row.raw === null ? null : Buffer.from(row.raw)},
                  ${row.providerMessageId}, ${row.createdAt}::timestamptz, true, ${limit.leaseUntil}::timestamptz
                WHERE (SELECT count(*) FROM mail_log
                       WHERE project_id = ${row.projectId} AND direction = 'out'
                         AND created_at >= ${limit.since}::timestamptz
                         AND (NOT pending OR lease_until > ${limit.now}::timestamptz)) < ${limit.cap}
                RETURNING id`
            return inserted.length === 0 ? ("capped" as const) : ("reserved" as const)
          })
        ).pipe(Effect.orDie),
      renewOut: (id, leaseUntil) =>
        sql`UPDATE mail_log SET lease_until = ${leaseUntil}::timestamptz WHERE id = ${id} AND pending
            RETURNING id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),
      // The held row shown; when it was deleted after its lease ended, inserted shown (unless the project is gone).
      // The raw message travels again only in that rare case.
      confirmOut: (row, providerMessageId) =>
        sql`UPDATE mail_log SET pending = false, lease_until = NULL, provider_message_id = ${providerMessageId}
            WHERE id = ${row.id} RETURNING id`.pipe(
          Effect.flatMap((rows) =>
            rows.length > 0
              ? Effect.void
              : sql`
                  INSERT INTO mail_log (id, project_id, direction, mail_from, mail_to, subject, outcome, size, spf,
                    raw, provider_message_id, created_at)
                  SELECT ${row.id}, ${row.projectId}, ${row.direction}, ${row.from}, ${row.to}, ${row.subject},
                    ${row.outcome}, ${row.size}, ${row.spf}, ${row.raw === null ? null : Buffer.from(row.raw)},
                    ${providerMessageId}, ${row.createdAt}::timestamptz
                  WHERE EXISTS (SELECT 1 FROM projects WHERE id = ${row.projectId})
                  ON CONFLICT (id) DO NOTHING`.pipe(Effect.asVoid)
          ),
          Effect.orDie
        ),
      releaseOut: (id) => sql`DELETE FROM mail_log WHERE id = ${id} AND pending`.pipe(Effect.asVoid, Effect.orDie),
      releaseExpired: (now) =>
        sql`DELETE FROM mail_log WHERE pending AND (lease_until IS NULL OR lease_until <= ${now}::timestamptz)
            RETURNING id`.pipe(
          Effect.map((rows) => rows.length),
          Effect.orDie
        ),
      setOutcome: (providerMessageId, outcome) =>
        sql`UPDATE mail_log SET outcome = ${outcome}
            WHERE provider_message_id = ${providerMessageId} AND direction = 'out' RETURNING id`.pipe(
          Effect.map((rows) => rows.length),
          Effect.orDie
        ),
      getLog: (projectId, id) => getLog({ projectId, id }).pipe(Effect.map(Option.map(toEntry)), Effect.orDie)
    })
  })
)
