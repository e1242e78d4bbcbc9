import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Runtime logs (decisions.md part 13): one row per worker invocation, going with its project. `seq` is the recording
 * order (what a stream resumes after), `at` the invocation's start (what pages follow); the event is kept as `json`,
 * not `jsonb`, so a logged object keeps its keys as written. `worker_log_purges` holds how far the retention job has
 * looked, so it visits only projects that recorded since.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE worker_log_events (
      seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      id text NOT NULL CONSTRAINT worker_log_events_id_key UNIQUE,
      project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      deployment_id text NOT NULL,
      at timestamptz NOT NULL,
      outcome text NOT NULL,
      event json NOT NULL
    )`
  yield* sql`CREATE INDEX worker_log_events_page ON worker_log_events (project_id, at DESC, id COLLATE "C" DESC)`
  yield* sql`CREATE INDEX worker_log_events_recorded ON worker_log_events (project_id, seq)`
  yield* sql`CREATE INDEX worker_log_events_at ON worker_log_events (at)`
  yield* sql`
    CREATE TABLE worker_log_purges (
      singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      last_seq bigint NOT NULL
    )`
  yield* sql`INSERT INTO worker_log_purges (singleton, last_seq) VALUES (true, 0)`
})
