import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Visitor passes to protected deployments, issued by the edge (spec 4.11, 5.8). */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE edge_sessions (
      token_hash text PRIMARY KEY,
      host text NOT NULL,
      project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      user_id text,
      expires_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX edge_sessions_expires_idx ON edge_sessions (expires_at)`
})
