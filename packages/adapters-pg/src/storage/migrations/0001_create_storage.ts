import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The storage add-on (spec 4.7): one row per project ever granted, its prefix fixed by the first grant (unique, so two
 * projects never share objects), kept after a revoke with the node's last reported usage; it goes with the project.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE storage_grants (
      project_id text PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
      prefix text NOT NULL UNIQUE,
      granted boolean NOT NULL,
      used_bytes bigint NOT NULL DEFAULT 0 CHECK (used_bytes >= 0)
    )`
})
