import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** A record the service keeps for a custom hostname in its org's own zone (`managed_by: system`; users cannot change it). */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE dns_rrsets ADD COLUMN managed boolean NOT NULL DEFAULT false`
})
