import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The node relay's held rows get a lease their process renews while the transport has the message: a held row whose
 * lease ended (its process died mid-send) no longer counts toward the project's hourly cap and is deleted by the
 * project's next send or the hourly purge. Rows held before this migration have no lease and stop counting at once.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE mail_log ADD COLUMN lease_until timestamptz`
  yield* sql`CREATE INDEX mail_log_held ON mail_log (project_id, lease_until) WHERE pending`
})
