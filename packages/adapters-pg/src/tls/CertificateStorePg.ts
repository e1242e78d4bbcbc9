import { type AccountRow, type CertificateRow } from "@hostplane/core/tls/Certificate"
import { CertificateFeedLost, CertificateStore } from "@hostplane/core/tls/CertificateStore"
import { Effect, Layer, Option, Queue, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { NullableTimestamp, Timestamp } from "../internal/Rows.ts"
import { PgSession } from "../PgSession.ts"

/** The channel the `tls_certificates` trigger notifies (payload: the hostname) when a change commits. */
export const channel = "hostplane_tls"

const Row = Schema.Struct({
  name: Schema.String,
  status: Schema.Literals(["pending", "issued", "failed"]),
  chain: Schema.NullOr(Schema.String),
  keyId: Schema.NullOr(Schema.String),
  keyCiphertext: Schema.NullOr(Schema.String),
  expiresAt: NullableTimestamp,
  orderUrl: Schema.NullOr(Schema.String),
  orderKeyId: Schema.NullOr(Schema.String),
  orderKeyCiphertext: Schema.NullOr(Schema.String),
  lastError: Schema.NullOr(Schema.String),
  failures: Schema.Number,
  retryAt: NullableTimestamp,
  updatedAt: Timestamp
})

const sealedOf = (keyId: string | null, ciphertext: string | null) =>
  keyId === null || ciphertext === null ? null : { keyId, ciphertext }

const toRow = (row: typeof Row.Type): CertificateRow => ({
  name: row.name,
  status: row.status,
  chain: row.chain,
  key: sealedOf(row.keyId, row.keyCiphertext),
  expiresAt: row.expiresAt,
  orderUrl: row.orderUrl,
  orderKey: sealedOf(row.orderKeyId, row.orderKeyCiphertext),
  lastError: row.lastError,
  failures: row.failures,
  retryAt: row.retryAt,
  updatedAt: row.updatedAt
})

const Account = Schema.Struct({ keyId: Schema.String, keyCiphertext: Schema.String, url: Schema.NullOr(Schema.String) })
const toAccount = (row: typeof Account.Type): AccountRow => ({
  key: { keyId: row.keyId, ciphertext: row.keyCiphertext },
  url: row.url
})

/** `CertificateStore` on PostgreSQL; changes reach every server through `LISTEN`/`NOTIFY` on `channel`. */
export const layer = Layer.effect(
  CertificateStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const session = yield* PgSession
    const columns = sql`name, status, chain, key_id, key_ciphertext, expires_at, order_url, order_key_id,
      order_key_ciphertext, last_error, failures, retry_at, updated_at`
    const find = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: Row,
      execute: (name) => sql`SELECT ${columns} FROM tls_certificates WHERE name = ${name}`
    })
    const served = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Row,
      execute: () => sql`SELECT ${columns} FROM tls_certificates WHERE chain IS NOT NULL AND key_id IS NOT NULL
        AND expires_at IS NOT NULL`
    })
    const due = SqlSchema.findAll({
      Request: Schema.Struct({ now: Schema.String, renewBy: Schema.String, limit: Schema.Number }),
      Result: Schema.Struct({ name: Schema.String }),
      execute: ({ now, renewBy, limit }) => sql`
        SELECT h.name FROM hostnames h LEFT JOIN tls_certificates c ON c.name = h.name
        WHERE h.status = 'active' AND (
          c.name IS NULL
          OR (c.status = 'issued' AND c.retry_at IS NULL AND c.expires_at <= ${renewBy}::timestamptz)
          OR ((c.status <> 'issued' OR c.retry_at IS NOT NULL) AND (c.retry_at IS NULL OR c.retry_at <= ${now}::timestamptz))
        )
        ORDER BY COALESCE(c.retry_at, c.expires_at, h.verified_at, h.created_at), h.name COLLATE "C"
        LIMIT ${limit}`
    })
    const account = SqlSchema.findOneOption({
      Request: Schema.Void,
      Result: Account,
      execute: () => sql`SELECT key_id, key_ciphertext, url FROM tls_account WHERE id = 1`
    })
    const challenge = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: Schema.Struct({ keyAuthorization: Schema.String }),
      execute: (token) => sql`SELECT key_authorization FROM tls_challenges WHERE token = ${token}`
    })
    return CertificateStore.of({
      find: (name) => find(name).pipe(Effect.map(Option.map(toRow)), Effect.orDie),
      served: served(undefined).pipe(
        Effect.map((rows) =>
          rows.flatMap((row) => {
            const key = sealedOf(row.keyId, row.keyCiphertext)
            return row.chain !== null && key !== null && row.expiresAt !== null
              ? [{ name: row.name, chain: row.chain, key, expiresAt: row.expiresAt }]
              : []
          })
        ),
        Effect.orDie
      ),
      due: (now, renewBy, limit) =>
        due({ now, renewBy, limit }).pipe(
          Effect.map((rows) => rows.map((row) => row.name)),
          Effect.orDie
        ),
      put: (row) =>
        sql`INSERT INTO tls_certificates (name, status, chain, key_id, key_ciphertext, expires_at, order_url,
            order_key_id, order_key_ciphertext, last_error, failures, retry_at, updated_at)
          VALUES (${row.name}, ${row.status}, ${row.chain}, ${row.key?.keyId ?? null}, ${row.key?.ciphertext ?? null},
            ${row.expiresAt}::timestamptz, ${row.orderUrl}, ${row.orderKey?.keyId ?? null},
            ${row.orderKey?.ciphertext ?? null}, ${row.lastError}, ${row.failures}, ${row.retryAt}::timestamptz,
            ${row.updatedAt}::timestamptz)
          ON CONFLICT (name) DO UPDATE SET status = EXCLUDED.status, chain = EXCLUDED.chain, key_id = EXCLUDED.key_id,
            key_ciphertext = EXCLUDED.key_ciphertext, expires_at = EXCLUDED.expires_at, order_url = EXCLUDED.order_url,
            order_key_id = EXCLUDED.order_key_id, order_key_ciphertext = EXCLUDED.order_key_ciphertext,
            last_error = EXCLUDED.last_error, failures = EXCLUDED.failures, retry_at = EXCLUDED.retry_at,
            updated_at = EXCLUDED.updated_at`.pipe(Effect.asVoid, Effect.orDie),
      remove: (name) => sql`DELETE FROM tls_certificates WHERE name = ${name}`.pipe(Effect.asVoid, Effect.orDie),
      removeOrphans: sql<{ name: string }>`DELETE FROM tls_certificates c WHERE NOT EXISTS (
          SELECT 1 FROM hostnames h WHERE h.name = c.name AND h.status = 'active') RETURNING c.name`.pipe(
        Effect.map((rows) => rows.map((row) => row.name)),
        Effect.orDie
      ),
      account: account(undefined).pipe(Effect.map(Option.map(toAccount)), Effect.orDie),
      claimAccount: (row) =>
        sql`INSERT INTO tls_account (id, key_id, key_ciphertext, url) VALUES (1, ${row.key.keyId}, ${row.key.ciphertext},
            ${row.url}) ON CONFLICT (id) DO NOTHING`.pipe(
          Effect.andThen(account(undefined)),
          Effect.map((stored) => Option.match(stored, { onNone: () => row, onSome: toAccount })),
          Effect.orDie
        ),
      setAccountUrl: (url) => sql`UPDATE tls_account SET url = ${url} WHERE id = 1`.pipe(Effect.asVoid, Effect.orDie),
      putChallenge: (token, keyAuthorization, at) =>
        sql`INSERT INTO tls_challenges (token, key_authorization, created_at)
          VALUES (${token}, ${keyAuthorization}, ${at}::timestamptz)
          ON CONFLICT (token) DO UPDATE SET key_authorization = EXCLUDED.key_authorization`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      challenge: (token) => challenge(token).pipe(Effect.map(Option.map((row) => row.keyAuthorization)), Effect.orDie),
      removeChallenge: (token) =>
        sql`DELETE FROM tls_challenges WHERE token = ${token}`.pipe(Effect.asVoid, Effect.orDie),
      watch: Effect.map(
        Effect.mapError(session.listen(channel), (cause) => new CertificateFeedLost({ message: cause.message })),
        (queue) => ({
          next: Queue.takeAll(queue).pipe(
            Effect.map((notes) => notes.map((note) => note.payload)),
            Effect.mapError((cause) => new CertificateFeedLost({ message: String(cause) }))
          )
        })
      )
    })
  })
)
