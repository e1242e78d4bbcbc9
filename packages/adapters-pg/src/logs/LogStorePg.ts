import { PgClient, PgTypes } from "@effect/sql-pg"
import type { LogEvent, LogEventRow } from "@hostplane/core/logs/LogEvent"
import { type LogListQuery, type LogNote, LogStore } from "@hostplane/core/logs/LogStore"
import { makeId } from "@hostplane/core/kernel/Ids"
import { Deferred, Effect, Layer, Option, PubSub, Queue, Result, Schedule } from "effect"
import { transaction } from "../internal/Transaction.ts"
import { PgSession } from "../PgSession.ts"

/** The channel recorded events are announced on when their insert commits (payload: `notesOf`). */
export const channel = "hostplane_worker_logs"

interface Deleted {
  readonly count: number
}

/**
 * What an id has before its last four characters: a recorded batch's ids are its random id and each event's place
 * (`RuntimeLogs.recordAll`), so a row whose ids all share it is found by it; a row whose ids do not is kept without.
 */
const batchOf = (id: string): string => id.slice(0, -4)

/**
 * One event per result row, its fields from the row's aligned arrays and its line: PostgreSQL picks the events asked
 * for, as the client reads many small values far more cheaply than one large one. Read as values (`.values`), so no
 * row becomes an object whose names are transformed before it becomes the event.
 */
type EventRow = readonly [
  id: string,
  at: number,
  deploymentId: string,
  outcome: LogEvent["outcome"],
  line: string,
  ...rest: ReadonlyArray<unknown>
]

/**
 * A stored event's line: what its row does not hold in the aligned arrays (id, instant, deployment, outcome), as a
 * JSON array. Positional, so a hello-world event is about 60 bytes instead of 260; migration logs/0003 writes the
 * same shape from the older rows.
 */
const lineOf = (event: LogEvent): string =>
  JSON.stringify([
    event.request.method,
    event.request.url,
    event.response === null ? null : event.response.status,
    event.durationMs,
    event.truncated,
    event.logs,
    event.exceptions
  ])

type Line = [
  method: string,
  url: string,
  status: number | null,
  durationMs: number,
  truncated: boolean,
  logs: LogEvent["logs"],
  exceptions: LogEvent["exceptions"]
]

const eventOf = ([id, at, deploymentId, outcome, line]: EventRow): LogEvent => {
  const [method, url, status, durationMs, truncated, logs, exceptions] = JSON.parse(line) as Line
  return {
    id,
    deploymentId,
    timestamp: new Date(at).toISOString(),
    outcome,
    request: { method, url },
    response: status === null ? null : { status },
    durationMs,
    logs,
    exceptions,
    truncated
  }
}

const parsed = (rows: ReadonlyArray<ReadonlyArray<unknown>>): Array<LogEvent> =>
  (rows as ReadonlyArray<EventRow>).map(eventOf)

/** Epoch milliseconds bound as `float8`: a JavaScript number infers `int4` or `int8` by its size. */
const millis = (value: number) => PgTypes.float8(value)
const millisArray = (values: ReadonlyArray<number>) => Result.getOrThrow(PgTypes.array(values, PgTypes.OID.float8))
const texts = (values: ReadonlyArray<string>) => Result.getOrThrow(PgTypes.array(values, PgTypes.OID.text))
const int4s = (values: ReadonlyArray<number>) => Result.getOrThrow(PgTypes.array(values, PgTypes.OID.int4))
const int2s = (values: ReadonlyArray<number>) => Result.getOrThrow(PgTypes.array(values, PgTypes.OID.int2))

/** A page's order: newest first by (timestamp, id), ids by code unit as PostgreSQL's `COLLATE "C"`. */
const newestFirst = ([aId, aAt]: EventRow, [bId, bAt]: EventRow): number =>
  aAt !== bAt ? bAt - aAt : aId < bId ? 1 : aId > bId ? -1 : 0

/** Where a page's reading of batches stopped: the last batch read, in (newest event, seq) order. */
interface Position {
  readonly lastAt: string
  readonly seq: string
}
/** A batch a page's round read, after one of its events that passed the page's filters (all null when none did). */
type RoundRow = readonly [
  id: string | null,
  at: number | null,
  deploymentId: string | null,
  outcome: LogEvent["outcome"] | null,
  line: string | null,
  seq: string,
  lastAt: string,
  count: number,
  /** The newest event's instant of the next batch the page would read (epoch ms), null when there is none. */
  nextAt: number | null
]

/**
 * Events announced together: a project's id, then at most this many of its event ids, in recording order. A
 * notification's payload must stay under PostgreSQL's 8000 bytes: 50 ids of up to 100 characters (the longest id the
 * logs area takes back as a stream's `Last-Event-ID`; its own are about 35).
 */
const idsPerNote = 50

/** A note as the listener heard it, with the transaction that recorded its event (none from an older server). */
interface Heard extends LogNote {
  readonly xact: bigint | undefined
}

/**
 * The notes of one notification: `<project id> <event id> <event id>... ~<recording transaction>`. The transaction
 * comes last, marked, so a server that reads only ids takes it for an id no event has.
 */
const notesOf = (payload: string): ReadonlyArray<Heard> => {
  const [projectId, ...words] = payload.split(" ")
  if (projectId === undefined || projectId === "") return []
  const project = makeId("prj", projectId)
  const mark = words.at(-1)
  const xact = mark !== undefined && /^~[0-9]+$/.test(mark) ? BigInt(mark.slice(1)) : undefined
  return words
    .filter((id) => id !== "" && !id.startsWith("~"))
    .map((id) => ({ projectId: project, id: makeId("log", id), xact }))
}

/** A PostgreSQL snapshot (`pg_current_snapshot()`): which transactions had committed when it was taken. */
interface Snapshot {
  readonly xmin: bigint
  readonly xmax: bigint
  readonly running: ReadonlySet<bigint>
}

const snapshotOf = (text: string): Snapshot => {
  const [xmin = "0", xmax = "0", running = ""] = text.split(":")
  return {
    xmin: BigInt(xmin),
    xmax: BigInt(xmax),
    running: new Set(running === "" ? [] : running.split(",").map((xact) => BigInt(xact)))
  }
}

/** Whether a transaction's work is in the snapshot (`pg_visible_in_snapshot`): it committed before it was taken. */
const committedBefore = (xact: bigint, snapshot: Snapshot): boolean =>
  xact < snapshot.xmin || (xact < snapshot.xmax && !snapshot.running.has(xact))

/**
 * `LogStore` on PostgreSQL. An insert is one statement that also notifies `channel` (once per project and up to
 * `idsPerNote` events, naming the recording transaction); each process listens once (on its session, `PgSession`,
 * from the first `watch`) and hands the notes to its subscribers, so an event recorded on any replica reaches every
 * follower. A notification reaches the listener some time after its commit, so a subscriber keeps the snapshot taken
 * once it listens and drops the notes of transactions that had committed by then: sequence numbers would not do, as
 * an insert may take a lower one and commit later. The purge looks only at projects that recorded since its last run.
 */
export const layer = Layer.effect(
  LogStore,
  Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const scope = yield* Effect.scope
    const session = yield* PgSession
    const notes = yield* PubSub.unbounded<Heard>()
    const listening = yield* Deferred.make<void>()

    const follow = Effect.scoped(
      Effect.gen(function* () {
        const queue = yield* session.listen(channel)
        yield* Deferred.succeed(listening, undefined)
        for (;;) {
          const batch = yield* Queue.takeAll(queue)
          yield* PubSub.publishAll(
            notes,
            batch.flatMap((note) => notesOf(note.payload))
          )
        }
      })
    ).pipe(
      Effect.tapError((error) =>
        Effect.logWarning(`runtime log feed lost (${error.message}); live streams miss events until it is back`)
      ),
      Effect.retry(Schedule.spaced("1 second"))
    )
    const started = yield* Effect.cached(Effect.andThen(Effect.forkIn(follow, scope), Deferred.await(listening)))

    /** A batch's events as rows (`b` the batch): its aligned arrays, with each event's place in it. */
    const unnested = sql`unnest(b.ids, b.times, b.event_deployments, b.event_outcomes, b.lines) WITH ORDINALITY
      AS e (id, at, deployment, outcome, line, place)`
    const columns = sql`e.id, e.at, b.deployments[e.deployment] AS deployment_id, b.outcomes[e.outcome] AS outcome,
      e.line`

    /**
     * The project's events after the `skip` first ones of the batch at `seq`, in recording order, at most `limit`:
     * PostgreSQL slices each batch's arrays, so only the events asked for cross the connection.
     */
    const eventsFrom = (projectId: string, seq: string, skip: number, limit: number) =>
      sql`SELECT ${columns}
        FROM (
          SELECT seq, sum(count) OVER (ORDER BY seq) - count AS before
          FROM (SELECT seq, count FROM worker_log_batches WHERE project_id = ${projectId} AND seq >= ${seq}::bigint
            ORDER BY seq LIMIT ${skip + limit}) firsts
        ) counted JOIN worker_log_batches b USING (seq)
        CROSS JOIN LATERAL (SELECT greatest(${skip} - counted.before, 0)::int + 1 AS low,
          (${skip + limit} - counted.before)::int AS high) slice
        CROSS JOIN LATERAL unnest(b.ids[slice.low : slice.high], b.times[slice.low : slice.high],
          b.event_deployments[slice.low : slice.high], b.event_outcomes[slice.low : slice.high],
          b.lines[slice.low : slice.high]) WITH ORDINALITY AS e (id, at, deployment, outcome, line, place)
        WHERE counted.before < ${skip + limit} AND counted.before + b.count > ${skip}
        ORDER BY b.seq, e.place`.values.pipe(Effect.map(parsed))

    const list = Effect.fn("LogStorePg.list")(function* (projectId: string, query: LogListQuery) {
      const before = query.before
      // What a batch must hold to be read (its bounds and kinds), and what an event must be to be on the page.
      const matching = sql`project_id = ${projectId} AND last_at >= ${query.since}::timestamptz
        AND (${before?.createdAt ?? null}::timestamptz IS NULL OR first_at <= ${before?.createdAt ?? null}::timestamptz)
        AND (${query.deploymentId ?? null}::text IS NULL OR ${query.deploymentId ?? null} = ANY (deployments))
        AND (${query.outcome ?? null}::text IS NULL OR ${query.outcome ?? null} = ANY (outcomes))`
      const wanted = sql`e.at >= ${millis(Date.parse(query.since))}
        AND (${before === undefined ? null : millis(Date.parse(before.createdAt))}::float8 IS NULL
          OR (e.at, e.id COLLATE "C") < (${before === undefined ? null : millis(Date.parse(before.createdAt))}::float8,
            ${before?.id ?? null}::text COLLATE "C"))
        AND (${query.deploymentId ?? null}::text IS NULL OR b.deployments[e.deployment] = ${query.deploymentId ?? null})
        AND (${query.outcome ?? null}::text IS NULL OR b.outcomes[e.outcome] = ${query.outcome ?? null})`
      const order = sql`ORDER BY e.at DESC, e.id COLLATE "C" DESC`
      const need = Math.max(query.limit, 1)
      const found: Array<EventRow> = []
      // Batches newest event first, a round at a time as many as hold `want` events, each giving PostgreSQL's pick
      // of its events on the page (at most `need`): a batch can hold an event of the page only if its newest one is
      // no older than the page's last, so once `limit` events are found the rest are read only down to that one
      // (batches' times overlap where nodes report late), and not at all when the next batch's newest is older. A
      // round that leaves the page short reads four times more.
      let from: Position | undefined
      let nextAt: number | null = null
      let want = need
      let exhausted = false
      while (found.length < query.limit && !exhausted) {
        const rows = (yield* sql`SELECT e.id, e.at, e.deployment_id, e.outcome, e.line, r.seq::text AS seq,
            r.last_at::text AS last_at, r.count, r.next_at
          FROM (
            SELECT seq, last_at, count, next_at FROM (
              SELECT seq, last_at, count, sum(count) OVER (ORDER BY last_at DESC, seq DESC) - count AS before,
                (extract(epoch FROM lead(last_at) OVER (ORDER BY last_at DESC, seq DESC)) * 1000)::float8 AS next_at
              FROM (SELECT seq, last_at, count FROM worker_log_batches WHERE ${matching}
                  AND (${from?.lastAt ?? null}::timestamptz IS NULL
                    OR (last_at, seq) < (${from?.lastAt ?? null}::timestamptz, ${from?.seq ?? "0"}::bigint))
                ORDER BY last_at DESC, seq DESC LIMIT ${want + 1}) newest
            ) counted WHERE before < ${want}
          ) r JOIN worker_log_batches b USING (seq)
          LEFT JOIN LATERAL (SELECT ${columns} FROM ${unnested} WHERE ${wanted} ${order} LIMIT ${need}) e ON true
          ORDER BY r.last_at DESC, r.seq DESC`.values) as ReadonlyArray<RoundRow>
        let read = 0
        for (const row of rows) {
          const [id, , , , , seq, lastAt, count, next] = row
          if (id !== null) found.push(row as unknown as EventRow)
          if (from === undefined || seq !== from.seq) read += count
          from = { lastAt, seq }
          nextAt = next
        }
        exhausted = read < want
        want *= 4
      }
      found.sort(newestFirst)
      const bound = found[query.limit - 1]
      if (bound !== undefined && from !== undefined && !exhausted && nextAt !== null && nextAt >= bound[1]) {
        found.push(
          ...((yield* sql`SELECT e.* FROM worker_log_batches b
            CROSS JOIN LATERAL (SELECT ${columns} FROM ${unnested} WHERE ${wanted}
              AND (e.at, e.id COLLATE "C") > (${millis(bound[1])}, ${bound[0]}::text COLLATE "C") ${order} LIMIT ${need}) e
            WHERE ${matching}
            AND last_at >= ${new Date(bound[1]).toISOString()}::timestamptz
            AND (last_at, seq) < (${from.lastAt}::timestamptz, ${from.seq}::bigint)`.values) as ReadonlyArray<EventRow>)
        )
        found.sort(newestFirst)
      }
      return parsed(found.slice(0, query.limit))
    })

    return LogStore.of({
      insert: (rows) => {
        if (rows.length === 0) return Effect.succeed(0)
        // One row per project: its events in recording order. Every column is one array over the rows (bound in
        // the binary format, so nothing is quoted), the events' arrays flat with each row's slice, so the statement
        // is the same whatever the batch.
        const byProject = new Map<string, Array<LogEventRow["event"]>>()
        for (const { projectId, event } of rows) {
          const events = byProject.get(projectId)
          if (events === undefined) byProject.set(projectId, [event])
          else events.push(event)
        }
        const projects: Array<string> = []
        const firsts: Array<string> = []
        const lasts: Array<string> = []
        const counts: Array<number> = []
        const keys: Array<string> = []
        const deployments: Array<string> = []
        const deploymentCounts: Array<number> = []
        const outcomes: Array<string> = []
        const outcomeCounts: Array<number> = []
        const ids: Array<string> = []
        const times: Array<number> = []
        const eventDeployments: Array<number> = []
        const eventOutcomes: Array<number> = []
        const lines: Array<string> = []
        for (const [projectId, events] of byProject) {
          let first = events[0]!
          let last = first
          let firstAt = Date.parse(first.timestamp)
          let lastAt = firstAt
          // Each event's deployment and outcome by its place (from 1) in the row's distinct ones.
          const seenDeployments = new Map<string, number>()
          const seenOutcomes = new Map<string, number>()
          const key = batchOf(first.id)
          const idLength = first.id.length
          let shared = idLength > 4
          for (const event of events) {
            const id = event.id
            if (shared && (id.length !== idLength || !id.startsWith(key))) shared = false
            const time = Date.parse(event.timestamp)
            if (time < firstAt) [first, firstAt] = [event, time]
            if (time > lastAt) [last, lastAt] = [event, time]
            let deployment = seenDeployments.get(event.deploymentId)
            if (deployment === undefined) {
              deployment = seenDeployments.size + 1
              seenDeployments.set(event.deploymentId, deployment)
            }
            let outcome = seenOutcomes.get(event.outcome)
            if (outcome === undefined) {
              outcome = seenOutcomes.size + 1
              seenOutcomes.set(event.outcome, outcome)
            }
            ids.push(id)
            times.push(time)
            eventDeployments.push(deployment)
            eventOutcomes.push(outcome)
            lines.push(lineOf(event))
          }
          projects.push(projectId)
          firsts.push(first.timestamp)
          lasts.push(last.timestamp)
          counts.push(events.length)
          keys.push(shared ? key : "")
          deployments.push(...seenDeployments.keys())
          deploymentCounts.push(seenDeployments.size)
          outcomes.push(...seenOutcomes.keys())
          outcomeCounts.push(seenOutcomes.size)
        }
        // Every array typed here: the client would otherwise infer each element's type, an object per element. One
        // notification per project and `idsPerNote` events (not one per event: a busy node records hundreds a second,
        // and every notification is a message to each listening server), made from the inserted ids, not sent twice.
        const insert = sql<{ readonly recorded: number }>`
          WITH input AS (
            SELECT *, (sum(count) OVER (ORDER BY ordinality) - count)::int AS id_from,
              (sum(deployment_count) OVER (ORDER BY ordinality) - deployment_count)::int AS deployment_from,
              (sum(outcome_count) OVER (ORDER BY ordinality) - outcome_count)::int AS outcome_from
            FROM unnest(${texts(projects)}::text[], ${texts(firsts)}::timestamptz[], ${texts(lasts)}::timestamptz[],
              ${int4s(counts)}::int[], ${texts(keys)}::text[], ${int4s(deploymentCounts)}::int[],
              ${int4s(outcomeCounts)}::int[])
              WITH ORDINALITY AS input (project_id, first_at, last_at, count, batch, deployment_count, outcome_count,
                ordinality)
          ), inserted AS (
            INSERT INTO worker_log_batches (project_id, first_at, last_at, count, batch, deployments, outcomes, ids,
              times, event_deployments, event_outcomes, lines)
            SELECT project_id, first_at, last_at, count, nullif(batch, ''),
              (${texts(deployments)}::text[])[deployment_from + 1 : deployment_from + deployment_count],
              (${texts(outcomes)}::text[])[outcome_from + 1 : outcome_from + outcome_count],
              (${texts(ids)}::text[])[id_from + 1 : id_from + count],
              (${millisArray(times)}::float8[])[id_from + 1 : id_from + count],
              (${int2s(eventDeployments)}::int2[])[id_from + 1 : id_from + count],
              (${int2s(eventOutcomes)}::int2[])[id_from + 1 : id_from + count],
              (${texts(lines)}::text[])[id_from + 1 : id_from + count]
            FROM input
            WHERE EXISTS (SELECT 1 FROM projects WHERE projects.id = input.project_id)
            ORDER BY ordinality
            RETURNING seq, project_id, count, ids
          ), sent AS (
            SELECT count(pg_notify(${channel}, payload || ' ~' || pg_current_xact_id()::text)) AS notes
            FROM (SELECT project_id || ' ' || array_to_string(ids[part * ${idsPerNote} + 1 : (part + 1) * ${idsPerNote}], ' ')
                AS payload
              FROM inserted CROSS JOIN LATERAL generate_series(0, (count - 1) / ${idsPerNote}) AS part
              ORDER BY seq, part) ordered
          )
          SELECT (SELECT coalesce(sum(count), 0) FROM inserted)::int AS recorded, (SELECT notes FROM sent) AS notes`
        // A project deleted between the check and the insert fails its foreign key: once more, without it.
        return insert.pipe(
          Effect.catchReason("SqlError", "ConstraintError", () => insert),
          Effect.map((result) => result[0]?.recorded ?? 0),
          Effect.orDie
        )
      },
      list: (projectId, query) => list(projectId, query).pipe(Effect.orDie),
      after: (projectId, id, limit) =>
        Effect.gen(function* () {
          const [mark] = yield* sql<{ readonly seq: string; readonly place: number }>`
            SELECT seq::text AS seq, array_position(ids, ${id}) AS place FROM worker_log_batches
            WHERE project_id = ${projectId} AND batch = ${batchOf(id)} AND ${id} = ANY (ids)
            UNION ALL
            SELECT seq::text AS seq, array_position(ids, ${id}) AS place FROM worker_log_batches
            WHERE project_id = ${projectId} AND batch IS NULL AND ${id} = ANY (ids)`
          if (mark === undefined) return Option.none()
          return Option.some(limit <= 0 ? [] : yield* eventsFrom(projectId, mark.seq, mark.place, limit))
        }).pipe(Effect.orDie),
      byIds: (projectId, ids) => {
        if (ids.length === 0) return Effect.succeed([])
        const wanted = [...ids]
        // Two lookups, each on the (project, batch) index: the rows of the ids' batches, and the rows without one;
        // PostgreSQL keeps only the events asked for of each.
        return sql`SELECT ${columns} FROM (
            SELECT * FROM worker_log_batches
            WHERE project_id = ${projectId} AND batch = ANY (${[...new Set(ids.map(batchOf))]}::text[])
              AND ids && ${wanted}::text[]
            UNION ALL
            SELECT * FROM worker_log_batches
            WHERE project_id = ${projectId} AND batch IS NULL AND ids && ${wanted}::text[]
          ) b CROSS JOIN LATERAL ${unnested}
          WHERE e.id = ANY (${wanted}::text[])
          ORDER BY b.seq, e.place`.values.pipe(Effect.map(parsed), Effect.orDie)
      },
      purge: ({ since, keep }) =>
        transaction(sql)(
          Effect.gen(function* () {
            const [aged] = yield* sql<Deleted>`WITH gone AS (
                DELETE FROM worker_log_batches WHERE first_at < ${since}::timestamptz AND last_at < ${since}::timestamptz
                RETURNING count
              ) SELECT coalesce(sum(count), 0)::int AS count FROM gone`
            // A batch with events on both sides of the window keeps only its recent ones (its distinct deployments
            // and outcomes stay as they were, so the events' places in them do too).
            const [cut] = yield* sql<Deleted>`WITH kept AS (
                SELECT b.seq, b.count AS was, count(*)::int AS count, min(e.at) AS first_at, max(e.at) AS last_at,
                  array_agg(e.id ORDER BY e.place) AS ids, array_agg(e.at ORDER BY e.place) AS times,
                  array_agg(e.deployment ORDER BY e.place) AS event_deployments,
                  array_agg(e.outcome ORDER BY e.place) AS event_outcomes, array_agg(e.line ORDER BY e.place) AS lines
                FROM worker_log_batches b CROSS JOIN LATERAL ${unnested}
                WHERE b.first_at < ${since}::timestamptz AND e.at >= ${millis(Date.parse(since))}
                GROUP BY b.seq
              ), cut AS (
                UPDATE worker_log_batches b SET count = kept.count, first_at = to_timestamp(kept.first_at / 1000),
                  last_at = to_timestamp(kept.last_at / 1000), ids = kept.ids, times = kept.times,
                  event_deployments = kept.event_deployments, event_outcomes = kept.event_outcomes, lines = kept.lines
                FROM kept WHERE b.seq = kept.seq
                RETURNING kept.was - kept.count AS dropped
              ) SELECT coalesce(sum(dropped), 0)::int AS count FROM cut`
            // Every batch with a recent event now starts at it: one still starting earlier holds none.
            const [stale] = yield* sql<Deleted>`WITH gone AS (
                DELETE FROM worker_log_batches WHERE first_at < ${since}::timestamptz RETURNING count
              ) SELECT coalesce(sum(count), 0)::int AS count FROM gone`
            // One purger at a time; it reads how far the last one looked, with an overlap for inserts that took a
            // sequence number before it looked but committed after.
            const [mark] = yield* sql<{
              readonly seq: string
            }>`SELECT last_seq::text AS seq FROM worker_log_purges FOR UPDATE`
            const [top] = yield* sql<{
              readonly seq: string | null
            }>`SELECT max(seq)::text AS seq FROM worker_log_batches`
            const from = Math.max(Number(mark?.seq ?? 0) - 10_000, 0)
            // Of each project that recorded since, the batches wholly past its newest `keep` events go, and the one
            // across that line loses its oldest events (a batch's events are in recording order), its bounds those
            // of the events it keeps.
            const [counted] = yield* sql<Deleted>`
              WITH ranked AS (
                SELECT seq, count, sum(count) OVER (PARTITION BY project_id ORDER BY seq DESC) AS upto
                FROM worker_log_batches
                WHERE project_id IN (SELECT DISTINCT project_id FROM worker_log_batches WHERE seq > ${from})
              ), gone AS (
                DELETE FROM worker_log_batches b USING ranked
                WHERE b.seq = ranked.seq AND ranked.upto - ranked.count >= ${keep}
                RETURNING b.count
              ), trimmed AS (
                UPDATE worker_log_batches b SET count = ${keep} - (ranked.upto - ranked.count)::int,
                  first_at = to_timestamp(bounds.first_at / 1000), last_at = to_timestamp(bounds.last_at / 1000),
                  ids = b.ids[cut.low :], times = b.times[cut.low :], event_deployments = b.event_deployments[cut.low :],
                  event_outcomes = b.event_outcomes[cut.low :], lines = b.lines[cut.low :]
                FROM ranked CROSS JOIN LATERAL (SELECT (ranked.upto - ${keep})::int + 1 AS low) cut
                  CROSS JOIN LATERAL (SELECT min(at) AS first_at, max(at) AS last_at
                    FROM worker_log_batches w CROSS JOIN LATERAL unnest(w.times[cut.low :]) AS at
                    WHERE w.seq = ranked.seq) bounds
                WHERE b.seq = ranked.seq AND ranked.upto > ${keep} AND ranked.upto - ranked.count < ${keep}
                RETURNING (ranked.upto - ${keep})::int AS dropped
              ) SELECT ((SELECT coalesce(sum(count), 0) FROM gone) + (SELECT coalesce(sum(dropped), 0) FROM trimmed))::int
                AS count`
            if (top?.seq !== null && top?.seq !== undefined) {
              yield* sql`UPDATE worker_log_purges SET last_seq = greatest(last_seq, ${top.seq}::bigint)`
            }
            return (aged?.count ?? 0) + (cut?.count ?? 0) + (stale?.count ?? 0) + (counted?.count ?? 0)
          })
        ).pipe(Effect.orDie),
      removeProject: (projectId) =>
        sql`DELETE FROM worker_log_batches WHERE project_id = ${projectId}`.pipe(Effect.asVoid, Effect.orDie),
      watch: Effect.gen(function* () {
        yield* started
        const subscription = yield* PubSub.subscribe(notes)
        // Taken once subscribed: a transaction it does not show commits later, and its notification comes after.
        const [taken] = yield* sql<{ readonly snapshot: string }>`SELECT pg_current_snapshot()::text AS snapshot`.pipe(
          Effect.orDie
        )
        const snapshot = snapshotOf(taken?.snapshot ?? "0:0:")
        const next: Effect.Effect<ReadonlyArray<LogNote>> = Effect.flatMap(PubSub.takeAll(subscription), (heard) => {
          const fresh = heard
            .filter((note) => note.xact === undefined || !committedBefore(note.xact, snapshot))
            .map(({ projectId, id }) => ({ projectId, id }))
          return fresh.length === 0 ? next : Effect.succeed(fresh)
        })
        return { next }
      })
    })
  })
)
