import { SshKeyExists } from "@hostplane/core/errors/Errors"
import { SshKeyType } from "@hostplane/core/git/Credentials"
import { CredentialStore } from "@hostplane/core/git/CredentialStore"
import { AccessTokenId, SshKeyId, UserId } from "@hostplane/core/kernel/Ids"
import { Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { NullableTimestamp, onUniqueViolation, Timestamp } from "../internal/Rows.ts"

const TokenRow = Schema.Struct({
  id: AccessTokenId,
  userId: UserId,
  name: Schema.String,
  tokenHash: Schema.String,
  createdAt: Timestamp,
  expiresAt: NullableTimestamp,
  lastUsedAt: NullableTimestamp,
  revokedAt: NullableTimestamp
})

const KeyRow = Schema.Struct({
  id: SshKeyId,
  userId: UserId,
  title: Schema.String,
  type: SshKeyType,
  fingerprint: Schema.String,
  publicKey: Schema.String,
  createdAt: Timestamp
})

/** `CredentialStore` on PostgreSQL. */
export const layer = Layer.effect(
  CredentialStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const tokenColumns = sql`id, user_id, name, token_hash, created_at, expires_at, last_used_at, revoked_at`
    const keyColumns = sql`id, user_id, title, type, fingerprint, public_key, created_at`

    const listTokens = SqlSchema.findAll({
      Request: Schema.String,
      Result: TokenRow,
      execute: (userId) =>
        sql`SELECT ${tokenColumns} FROM access_tokens WHERE user_id = ${userId} ORDER BY created_at, id`
    })
    const findToken = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: TokenRow,
      execute: (hash) => sql`SELECT ${tokenColumns} FROM access_tokens WHERE token_hash = ${hash}`
    })
    const listKeys = SqlSchema.findAll({
      Request: Schema.String,
      Result: KeyRow,
      execute: (userId) => sql`SELECT ${keyColumns} FROM ssh_keys WHERE user_id = ${userId} ORDER BY created_at, id`
    })
    const findKey = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: KeyRow,
      execute: (fingerprint) => sql`SELECT ${keyColumns} FROM ssh_keys WHERE fingerprint = ${fingerprint}`
    })

    return CredentialStore.of({
      listTokens: (userId) => listTokens(userId).pipe(Effect.orDie),
      insertToken: (row) =>
        sql`INSERT INTO access_tokens (id, user_id, name, token_hash, created_at, expires_at)
            VALUES (${row.id}, ${row.userId}, ${row.name}, ${row.tokenHash}, ${row.createdAt}::timestamptz,
                    ${row.expiresAt}::timestamptz)`.pipe(Effect.asVoid, Effect.orDie),
      findTokenByHash: (hash) => findToken(hash).pipe(Effect.orDie),
      revokeToken: (userId, id, at) =>
        sql`UPDATE access_tokens SET revoked_at = coalesce(revoked_at, ${at}::timestamptz)
            WHERE id = ${id} AND user_id = ${userId} RETURNING id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),
      touchToken: (id, at, staleBefore) =>
        sql`UPDATE access_tokens SET last_used_at = ${at}::timestamptz
            WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at <= ${staleBefore}::timestamptz)`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      listKeys: (userId) => listKeys(userId).pipe(Effect.orDie),
      insertKey: (row) =>
        sql`INSERT INTO ssh_keys (id, user_id, title, type, fingerprint, public_key, created_at)
            VALUES (${row.id}, ${row.userId}, ${row.title}, ${row.type}, ${row.fingerprint}, ${row.publicKey},
                    ${row.createdAt}::timestamptz)`.pipe(
          Effect.as(false),
          onUniqueViolation(sql, "ssh_keys_fingerprint_key", () => true),
          Effect.orDie,
          Effect.flatMap((taken) =>
            taken ? Effect.fail(new SshKeyExists({ message: "this key is already registered" })) : Effect.void
          )
        ),
      findKeyByFingerprint: (fingerprint) => findKey(fingerprint).pipe(Effect.orDie),
      removeKey: (userId, id) =>
        sql`DELETE FROM ssh_keys WHERE id = ${id} AND user_id = ${userId} RETURNING id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        )
    })
  })
)
