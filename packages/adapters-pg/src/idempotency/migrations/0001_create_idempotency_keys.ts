import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** `Idempotency-Key` records: the first answer to a user's key, kept 24 hours for its retries. */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE idempotency_keys (
      user_id text NOT NULL,
      key text NOT NULL,
      method text NOT NULL,
      path text NOT NULL,
      claim_id text NOT NULL,
      lease_until timestamptz NOT NULL,
      body_sha256 text,
      status integer,
      headers jsonb,
      body bytea,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (user_id, key)
    )`
  yield* sql`CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at)`
})
