import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Replicas (decisions.md part 15): a database's home, the replica whose embedded node holds its cluster, and the
 * endpoint it recorded so the others can answer where the database is. Null for databases made before: the first
 * replica that finds the cluster on its disk takes them.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE databases ADD COLUMN home text, ADD COLUMN endpoint jsonb`
})
