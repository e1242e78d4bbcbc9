import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The background verification of custom hostnames (spec 4.4): each pending name is due for a check at
 * `next_check_at`, which a runner's claim moves one cycle ahead, so replicas never check one name twice in a cycle.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE hostnames ADD COLUMN next_check_at timestamptz NOT NULL DEFAULT now()`
  yield* sql`DROP INDEX hostnames_pending_idx`
  yield* sql`CREATE INDEX hostnames_due_idx ON hostnames (next_check_at) WHERE status = 'pending_dns'`
})
