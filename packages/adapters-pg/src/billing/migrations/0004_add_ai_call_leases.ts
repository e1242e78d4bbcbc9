import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A pending AI call names the gateway process that owns it (`lease_owner`, a job-runner identity whose session lock
 * shows it alive) and a lease its call renews while it runs, with what the sweeper charges if that process dies
 * mid-call: the input estimate and the output characters streamed so far. Calls pending before this migration have
 * no owner and are swept as orphans.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    ALTER TABLE ai_calls
      ADD COLUMN lease_owner text,
      ADD COLUMN lease_until timestamptz,
      ADD COLUMN input_estimate bigint NOT NULL DEFAULT 0,
      ADD COLUMN output_chars bigint NOT NULL DEFAULT 0`
  yield* sql`CREATE INDEX ai_calls_pending_idx ON ai_calls (lease_until) WHERE state = 'pending'`
})
