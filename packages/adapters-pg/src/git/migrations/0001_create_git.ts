import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Git (spec 4.12): repos (names unique per project ignoring case among the live ones; a soft-deleted row stays until
 * the retention runner removes its disk copy, so it has no foreign key that a project's removal would cascade), the
 * ref update history of every push, personal access tokens by SHA-256, SSH keys by their unique fingerprint.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE repos (
      id text PRIMARY KEY,
      org_id text NOT NULL,
      project_id text NOT NULL,
      name text NOT NULL,
      visibility text NOT NULL CHECK (visibility IN ('private', 'public')),
      default_branch text NOT NULL,
      created_at timestamptz NOT NULL,
      deleted_at timestamptz
    )`
  yield* sql`CREATE UNIQUE INDEX repos_project_name_key ON repos (project_id, lower(name)) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX repos_org_id_idx ON repos (org_id) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX repos_deleted_at_idx ON repos (deleted_at) WHERE deleted_at IS NOT NULL`
  yield* sql`
    CREATE TABLE repo_ref_updates (
      seq bigserial PRIMARY KEY,
      repo_id text NOT NULL REFERENCES repos (id) ON DELETE CASCADE,
      ref text NOT NULL,
      old text,
      new text,
      user_id text NOT NULL,
      at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX repo_ref_updates_repo_idx ON repo_ref_updates (repo_id, seq DESC)`
  yield* sql`
    CREATE TABLE access_tokens (
      id text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      name text NOT NULL,
      token_hash text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL,
      expires_at timestamptz,
      last_used_at timestamptz,
      revoked_at timestamptz
    )`
  yield* sql`CREATE INDEX access_tokens_user_idx ON access_tokens (user_id)`
  yield* sql`
    CREATE TABLE ssh_keys (
      id text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      title text NOT NULL,
      type text NOT NULL,
      fingerprint text NOT NULL,
      public_key text NOT NULL,
      created_at timestamptz NOT NULL,
      CONSTRAINT ssh_keys_fingerprint_key UNIQUE (fingerprint)
    )`
  yield* sql`CREATE INDEX ssh_keys_user_idx ON ssh_keys (user_id)`
})
