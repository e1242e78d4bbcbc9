import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Runtime log events kept as one row per project and recorded batch instead of one row per event: PostgreSQL's cost
 * is per row (the tuple, its index entries, the foreign key's check, the `json` column's parse), and a busy node
 * records thousands of events a second. `events` holds the batch's events in recording order, one JSON text per line
 * (JSON text has no raw newline but as whitespace, which an older row's is turned into a space), `ids` their ids in
 * the same order, `batch` what every id of the row has before its last four characters when they share it (a
 * recorded batch's ids are its random id and each event's place, so an id leads to its row through that index;
 * rows without, such as the moved ones, are looked through), `seq` the batch's recording order; `first_at`/`last_at` bound the
 * events' own times, `deployments`/`outcomes` hold every value of the batch's events (at least): what lets a page or a
 * filter skip a batch. The existing events move over in their recording order, 500 to a row, and
 * `worker_log_purges` starts again from the new table's first batch.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE worker_log_batches (
      seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      first_at timestamptz NOT NULL,
      last_at timestamptz NOT NULL,
      count integer NOT NULL,
      batch text,
      ids text[] NOT NULL,
      deployments text[] NOT NULL,
      outcomes text[] NOT NULL,
      events text NOT NULL
    )`
  yield* sql`
    INSERT INTO worker_log_batches (project_id, first_at, last_at, count, ids, deployments, outcomes, events)
    SELECT project_id, min(at), max(at), count(*)::int, array_agg(id ORDER BY seq),
      array_agg(DISTINCT deployment_id), array_agg(DISTINCT outcome),
      string_agg(replace(event::text, chr(10), ' '), chr(10) ORDER BY seq)
    FROM (
      SELECT *, (row_number() OVER (PARTITION BY project_id ORDER BY seq) - 1) / 500 AS part FROM worker_log_events
    ) moved
    GROUP BY project_id, part
    ORDER BY min(seq)`
  yield* sql`DROP TABLE worker_log_events`
  yield* sql`CREATE INDEX worker_log_batches_recorded ON worker_log_batches (project_id, seq) INCLUDE (count)`
  yield* sql`CREATE INDEX worker_log_batches_page ON worker_log_batches (project_id, last_at DESC, seq DESC)`
  yield* sql`CREATE INDEX worker_log_batches_first_at ON worker_log_batches (first_at)`
  yield* sql`CREATE INDEX worker_log_batches_batch ON worker_log_batches (project_id, batch)`
  yield* sql`UPDATE worker_log_purges SET last_seq = 0`
})
