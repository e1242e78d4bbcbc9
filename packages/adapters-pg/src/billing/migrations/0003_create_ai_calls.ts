import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The AI gateway's calls (decisions.md part 6): each is recorded `pending` before the upstream is asked and becomes
 * `charged` in the statement that writes its `call` ledger row, so a call is charged at most once; the rows started
 * in the last minute are the per-project requests-per-minute count.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE ai_calls (
      id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
      project_id text NOT NULL,
      project_name text NOT NULL,
      model text NOT NULL,
      state text NOT NULL CHECK (state IN ('pending', 'charged')),
      input_tokens bigint,
      output_tokens bigint,
      cost_micro_cents bigint,
      started_at timestamptz NOT NULL,
      charged_at timestamptz
    )`
  yield* sql`CREATE INDEX ai_calls_project_started_idx ON ai_calls (project_id, started_at)`
})
