import { IdempotencyStore } from "@hostplane/core/idempotency/IdempotencyStore"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { Timestamp } from "../internal/Rows.ts"

const Row = Schema.Struct({
  userId: Schema.String,
  key: Schema.String,
  method: Schema.String,
  path: Schema.String,
  claimId: Schema.String,
  leaseUntil: Timestamp,
  bodySha256: Schema.NullOr(Schema.String),
  status: Schema.NullOr(Schema.Number),
  headers: Schema.NullOr(Schema.Record(Schema.String, Schema.String)),
  body: Schema.NullOr(Schema.Uint8Array),
  createdAt: Timestamp,
  expiresAt: Timestamp
})

/** Expired rows deleted by each claim: enough to keep up with the keys made, cheap on the expiry index. */
const purgeBatch = 100

/** `IdempotencyStore` on PostgreSQL: the primary key serialises claims, a lease marks the attempt running. */
export const layer = Layer.effect(
  IdempotencyStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const find = SqlSchema.findOneOption({
      Request: Schema.Struct({ userId: Schema.String, key: Schema.String }),
      Result: Row,
      execute: ({ userId, key }) => sql`
        SELECT user_id, key, method, path, claim_id, lease_until, body_sha256, status, headers, body, created_at,
          expires_at
        FROM idempotency_keys WHERE user_id = ${userId} AND key = ${key}`
    })
    return IdempotencyStore.of({
      claim: (input) =>
        Effect.gen(function* () {
          yield* sql`
            DELETE FROM idempotency_keys WHERE ctid IN (
              SELECT ctid FROM idempotency_keys WHERE expires_at <= ${input.now}::timestamptz LIMIT ${purgeBatch})`
          const claimed = yield* sql`
            INSERT INTO idempotency_keys (user_id, key, method, path, claim_id, lease_until, created_at, expires_at)
            VALUES (${input.userId}, ${input.key}, ${input.method}, ${input.path}, ${input.claimId},
              ${input.leaseUntil}::timestamptz, ${input.now}::timestamptz, ${input.expiresAt}::timestamptz)
            ON CONFLICT (user_id, key) DO UPDATE SET
              method = EXCLUDED.method, path = EXCLUDED.path, claim_id = EXCLUDED.claim_id,
              lease_until = EXCLUDED.lease_until, body_sha256 = NULL, status = NULL, headers = NULL, body = NULL,
              created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
            WHERE idempotency_keys.expires_at <= EXCLUDED.created_at
              OR (idempotency_keys.status IS NULL AND idempotency_keys.lease_until <= EXCLUDED.created_at)
            RETURNING claim_id`
          if (claimed.length > 0) return Option.none()
          const row = yield* find({ userId: input.userId, key: input.key })
          // The holder finished and was purged between the two statements: the key is free again.
          if (Option.isNone(row)) return Option.none()
          const { status, headers, body, ...rest } = row.value
          return Option.some({
            ...rest,
            response: status === null ? null : { status, headers: headers ?? {}, body: body ?? new Uint8Array() }
          })
        }).pipe(Effect.orDie),
      renew: (userId, key, claimId, leaseUntil) =>
        sql`UPDATE idempotency_keys SET lease_until = ${leaseUntil}::timestamptz
          WHERE user_id = ${userId} AND key = ${key} AND claim_id = ${claimId} AND status IS NULL`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      complete: (userId, key, claimId, { bodySha256, response }) =>
        sql`UPDATE idempotency_keys SET body_sha256 = ${bodySha256}, status = ${response.status},
            headers = ${JSON.stringify(response.headers)}::jsonb, body = ${Buffer.from(response.body)}
          WHERE user_id = ${userId} AND key = ${key} AND claim_id = ${claimId} AND status IS NULL`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      release: (userId, key, claimId) =>
        sql`DELETE FROM idempotency_keys
          WHERE user_id = ${userId} AND key = ${key} AND claim_id = ${claimId} AND status IS NULL`.pipe(
          Effect.asVoid,
          Effect.orDie
        )
    })
  })
)
