import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Project secrets (spec 4.5), sealed with the key named by `key_id`; access policies with the scrypt hash of the
 * shared password and the SHA-256 of the bypass secret; one-time access codes by their SHA-256 (spec 4.11).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE secrets (
      project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      name text NOT NULL,
      version integer NOT NULL CHECK (version >= 1),
      key_id text NOT NULL,
      ciphertext text NOT NULL,
      updated_at timestamptz NOT NULL,
      PRIMARY KEY (project_id, name)
    )`
  yield* sql`
    CREATE TABLE access_policies (
      project_id text PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
      mode text NOT NULL CHECK (mode IN ('public', 'org', 'password')),
      password_hash text,
      bypass_hash text,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE TABLE access_codes (
      code_hash text PRIMARY KEY,
      host text NOT NULL,
      project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      org_id text NOT NULL,
      user_id text NOT NULL,
      expires_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX access_codes_expires_at_idx ON access_codes (expires_at)`
  yield* sql`CREATE INDEX access_codes_project_id_idx ON access_codes (project_id)`
})
