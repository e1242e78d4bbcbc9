import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The node relay's held rows: an `out` row is inserted before the transport is called, so the hourly cap counts it
 * under the address row's lock, and shown only once the transport has taken the message.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE mail_log ADD COLUMN pending boolean NOT NULL DEFAULT false`
})
