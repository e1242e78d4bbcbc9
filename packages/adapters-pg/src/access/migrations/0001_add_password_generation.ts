import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Each new shared password starts a generation; a password pass carries the generation it was earned under. */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE access_policies ADD COLUMN password_generation integer NOT NULL DEFAULT 0`
  yield* sql`UPDATE access_policies SET password_generation = 1 WHERE password_hash IS NOT NULL`
  yield* sql`ALTER TABLE edge_sessions ADD COLUMN password_generation integer`
})
