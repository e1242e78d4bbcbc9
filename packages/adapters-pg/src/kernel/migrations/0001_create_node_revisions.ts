import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The node revision: one counter row, raised inside each writing transaction (its row lock orders the commits), and
 * each project's latest revision. No foreign key: a deleted project keeps its stamp so a node learns it is gone.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE node_revision (
      id boolean PRIMARY KEY DEFAULT true CHECK (id),
      value bigint NOT NULL
    )`
  yield* sql`INSERT INTO node_revision (id, value) VALUES (true, 0)`
  yield* sql`
    CREATE TABLE project_revisions (
      project_id text PRIMARY KEY,
      revision bigint NOT NULL UNIQUE
    )`
})
