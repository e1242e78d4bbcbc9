import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Work becoming claimable notifies `hostplane_jobs` with the job's kind when its transaction commits, so idle runners
 * sleep until they hear of it or the next job comes due instead of polling every second: a job inserted (even one due
 * later: a runner's sleep must not pass its time), made due sooner (an abort), or given back due by a closing runner.
 * PostgreSQL sends one notification per kind per transaction. Triggers, so no writer can forget.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE FUNCTION hostplane_jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('hostplane_jobs', NEW.kind);
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER jobs_notify_insert AFTER INSERT ON jobs
    FOR EACH ROW EXECUTE FUNCTION hostplane_jobs_notify()`
  yield* sql`
    CREATE TRIGGER jobs_notify_due AFTER UPDATE ON jobs
    FOR EACH ROW WHEN (NEW.terminal_code IS NULL AND (NEW.run_at < OLD.run_at
      OR (OLD.lease_owner IS NOT NULL AND NEW.lease_owner IS NULL AND NEW.run_at <= now())))
    EXECUTE FUNCTION hostplane_jobs_notify()`
})
