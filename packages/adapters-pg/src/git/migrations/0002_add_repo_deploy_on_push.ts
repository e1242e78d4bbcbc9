import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Deploy on push (decisions.md part 17): a repo's switch, off for every repo that exists. */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE repos ADD COLUMN deploy_on_push boolean NOT NULL DEFAULT false`
})
