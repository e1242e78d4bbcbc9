import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Projects, their hostnames (default and custom, unique across orgs) and durable operations (spec 4.3, 4.4). */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE projects (
      id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs (id),
      name text NOT NULL,
      hostname text NOT NULL,
      created_at timestamptz NOT NULL,
      live_deployment_id text,
      deleting_since timestamptz,
      CONSTRAINT projects_org_name_key UNIQUE (org_id, name)
    )`
  yield* sql`
    CREATE TABLE hostnames (
      name text PRIMARY KEY,
      project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      org_id text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('default', 'custom')),
      status text NOT NULL CHECK (status IN ('pending_dns', 'active')),
      verify_token text,
      last_error text,
      created_at timestamptz NOT NULL,
      verified_at timestamptz
    )`
  yield* sql`CREATE INDEX hostnames_project_id_idx ON hostnames (project_id)`
  yield* sql`CREATE INDEX hostnames_pending_idx ON hostnames (created_at) WHERE status = 'pending_dns'`
  yield* sql`
    CREATE TABLE operations (
      id text PRIMARY KEY,
      kind text NOT NULL,
      org_id text NOT NULL,
      project_id text NOT NULL,
      phase text NOT NULL,
      terminal_code text CHECK (terminal_code IN ('done', 'aborted', 'failed')),
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      next_run_at timestamptz NOT NULL,
      last_error text
    )`
  yield* sql`CREATE INDEX operations_due_idx ON operations (next_run_at) WHERE terminal_code IS NULL`
  yield* sql`CREATE INDEX operations_project_idx ON operations (project_id, kind) WHERE terminal_code IS NULL`
})
