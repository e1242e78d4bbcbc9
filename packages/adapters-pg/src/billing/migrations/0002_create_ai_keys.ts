import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The AI add-on (spec 4.10): each granted project's gateway key (only its SHA-256 is kept; revoking deletes it, so a
 * new grant issues a new key), and each org's count of auto top-ups on its latest day (at most `autoTopupPerDay`).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE ai_keys (
      project_id text PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
      key_hash text NOT NULL UNIQUE,
      key_sealed text NOT NULL,
      created_at timestamptz NOT NULL
    )`
  yield* sql`ALTER TABLE ai_credit ADD COLUMN autotopup_day date, ADD COLUMN autotopups_on_day integer NOT NULL DEFAULT 0`
})
