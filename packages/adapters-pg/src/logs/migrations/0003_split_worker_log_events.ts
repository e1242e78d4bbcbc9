import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A batch's events as arrays aligned with `ids`, so PostgreSQL picks a page's, a filter's or a resume's events
 * without reading the others, and a node sends fewer bytes per event: `times` each event's instant in epoch
 * milliseconds, `event_deployments`/`event_outcomes` its place (from 1) in the row's `deployments`/`outcomes`, and
 * `lines` the rest of it as a JSON array `[method, url, status or null, durationMs, truncated, logs, exceptions]`
 * (`LogStorePg`'s codec). Existing rows are rewritten from their `events` text, which goes; a logged value keeps its
 * JSON text (the `json` type keeps it as written).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    ALTER TABLE worker_log_batches ADD COLUMN times float8[], ADD COLUMN event_deployments int2[],
      ADD COLUMN event_outcomes int2[], ADD COLUMN lines text[]`
  yield* sql`
    UPDATE worker_log_batches b SET deployments = split.deployments, outcomes = split.outcomes, times = split.times,
      event_deployments = split.event_deployments, event_outcomes = split.event_outcomes, lines = split.lines
    FROM (
      SELECT line.seq, kinds.deployments, kinds.outcomes,
        array_agg((extract(epoch FROM (line.event ->> 'timestamp')::timestamptz) * 1000)::float8 ORDER BY line.place)
          AS times,
        array_agg(array_position(kinds.deployments, line.event ->> 'deploymentId')::int2 ORDER BY line.place)
          AS event_deployments,
        array_agg(array_position(kinds.outcomes, line.event ->> 'outcome')::int2 ORDER BY line.place) AS event_outcomes,
        array_agg(json_build_array(line.event -> 'request' ->> 'method', line.event -> 'request' ->> 'url',
          line.event -> 'response' -> 'status', line.event -> 'durationMs', line.event -> 'truncated',
          line.event -> 'logs', line.event -> 'exceptions')::text ORDER BY line.place) AS lines
      FROM (
        SELECT o.seq, text::json AS event, place
        FROM worker_log_batches o CROSS JOIN LATERAL unnest(string_to_array(o.events, chr(10))) WITH ORDINALITY
          AS l (text, place)
      ) line JOIN (
        SELECT o.seq, array_agg(DISTINCT text::json ->> 'deploymentId') AS deployments,
          array_agg(DISTINCT text::json ->> 'outcome') AS outcomes
        FROM worker_log_batches o CROSS JOIN LATERAL unnest(string_to_array(o.events, chr(10))) AS l (text)
        GROUP BY o.seq
      ) kinds USING (seq)
      GROUP BY line.seq, kinds.deployments, kinds.outcomes
    ) split
    WHERE b.seq = split.seq`
  yield* sql`
    ALTER TABLE worker_log_batches DROP COLUMN events, ALTER COLUMN times SET NOT NULL,
      ALTER COLUMN event_deployments SET NOT NULL, ALTER COLUMN event_outcomes SET NOT NULL,
      ALTER COLUMN lines SET NOT NULL`
})
