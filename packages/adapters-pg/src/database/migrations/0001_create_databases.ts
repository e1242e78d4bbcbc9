import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The database add-on (spec 4.6): one record per project database with its sealed password, tokens by verifier, and
 * generations, which are kept when the record goes (the final safety generation stays listed).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE databases (
      project_id text PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
      key_id text NOT NULL,
      ciphertext text NOT NULL,
      epoch integer NOT NULL DEFAULT 1,
      operation_id text,
      created_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE TABLE database_tokens (
      project_id text NOT NULL REFERENCES databases (project_id) ON DELETE CASCADE,
      "user" text NOT NULL,
      verifier text NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (project_id, "user")
    )`
  yield* sql`
    CREATE TABLE database_generations (
      project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      epoch integer NOT NULL,
      seq integer NOT NULL,
      bytes bigint NOT NULL,
      sha256 text NOT NULL,
      offsite_key text NOT NULL,
      created_at timestamptz NOT NULL,
      last_checked_at timestamptz,
      check_failed_at timestamptz,
      PRIMARY KEY (project_id, epoch, seq)
    )`
})
