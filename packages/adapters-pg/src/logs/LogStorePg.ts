import { PgClient } from "@effect/sql-pg"
import type { LogEvent, LogEventRow } from "@hostplane/core/logs/LogEvent"
import { type LogListQuery, type LogNote, LogStore } from "@hostplane/core/logs/LogStore"
import { makeId } from "@hostplane/core/kernel/Ids"
import { Deferred, Effect, Layer, Option, PubSub, Queue, Schedule } from "effect"
import { transaction } from "../internal/Transaction.ts"
import { unsharedClient } from "../UnsharedClient.ts"

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
 * One event's JSON text per result row, read as text (the client's name transforms would rename a logged object's
 * keys): PostgreSQL cuts a batch's lines, as the client reads many small values far more cheaply than one large one
 * (about 6 ms of its CPU per 100 KB value, measured, against about 1 for the same bytes as 500 rows).
 */
interface EventLine {
  readonly event: string
}

const parsed = (rows: ReadonlyArray<EventLine>): Array<LogEvent> => rows.map((row) => JSON.parse(row.event) as LogEvent)

/** A page's order: newest first by (timestamp, id), ids by code unit as PostgreSQL's `COLLATE "C"`. */
const newestFirst = (a: Placed, b: Placed): number =>
  a.at !== b.at ? b.at - a.at : a.event.id < b.event.id ? 1 : a.event.id > b.event.id ? -1 : 0

interface Placed {
  readonly at: number
  readonly event: LogEvent
}

/** Where a page's reading of batches stopped: the last batch read, in (newest event, seq) order. */
interface Position {
  readonly lastAt: string
  readonly seq: string
}
interface PageLine extends EventLine, Position {
  readonly seq: string
  readonly count: number
}

/**
 * Events announced together: a project's id, then at most this many of its event ids, in recording order. A
 * notification's payload must stay under PostgreSQL's 8000 bytes: 50 ids of up to 100 characters (the longest id the
 * logs area takes back as a stream's `Last-Event-ID`; its own are about 35).
 */
const idsPerNote = 50

/** A PostgreSQL array literal of texts (each quoted, its quotes and backslashes escaped), bound as one parameter. */
const textArray = (values: ReadonlyArray<string>): string => {
  let literal = "{"
  for (let i = 0; i < values.length; i++) {
    if (i > 0) literal += ","
    literal += `"${values[i]!.replace(/["\\]/gu, "\\$&")}"`
  }
  return `${literal}}`
}

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
 * `idsPerNote` events, naming the recording transaction); each process listens once (an unshared connection, opened
 * at the first `watch`) and hands the notes to its subscribers, so an event recorded on any replica reaches every
 * follower. A notification reaches the listener some time after its commit, so a subscriber keeps the snapshot taken
 * once it listens and drops the notes of transactions that had committed by then: sequence numbers would not do, as
 * an insert may take a lower one and commit later. The purge looks only at projects that recorded since its last run.
 */
export const layer = Layer.effect(
  LogStore,
  Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const scope = yield* Effect.scope
    // LISTEN holds its connection for life: an unshared one (see `unsharedClient`).
    const feeds = yield* unsharedClient(1)
    const notes = yield* PubSub.unbounded<Heard>()
    const listening = yield* Deferred.make<void>()

    const follow = Effect.scoped(
      Effect.gen(function* () {
        const queue = yield* feeds.listen(channel)
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

    /**
     * The project's events after the `skip` first ones of the batch at `seq`, in recording order, at most `limit`:
     * each batch's lines are cut out by PostgreSQL, so only the events asked for cross the connection.
     */
    const eventsFrom = (projectId: string, seq: string, skip: number, limit: number) =>
      sql<EventLine>`SELECT unnest((string_to_array(b.events, chr(10)))[greatest(${skip} - counted.before, 0) + 1 :
            ${skip + limit} - counted.before]) AS event
        FROM (
          SELECT seq, sum(count) OVER (ORDER BY seq) - count AS before
          FROM (SELECT seq, count FROM worker_log_batches WHERE project_id = ${projectId} AND seq >= ${seq}::bigint
            ORDER BY seq LIMIT ${skip + limit}) firsts
        ) counted JOIN worker_log_batches b USING (seq)
        WHERE counted.before < ${skip + limit} AND counted.before + b.count > ${skip}
        ORDER BY b.seq`.pipe(Effect.map(parsed))

    const list = Effect.fn("LogStorePg.list")(function* (projectId: string, query: LogListQuery) {
      const since = Date.parse(query.since)
      const before =
        query.before === undefined ? undefined : { at: Date.parse(query.before.createdAt), ...query.before }
      const found: Array<Placed> = []
      const take = (rows: ReadonlyArray<EventLine>) => {
        for (const event of parsed(rows)) {
          const placed = { at: Date.parse(event.timestamp), event }
          if (
            placed.at >= since &&
            (before === undefined ||
              newestFirst(placed, { at: before.at, event: { id: before.id } as LogEvent }) > 0) &&
            (query.deploymentId === undefined || event.deploymentId === query.deploymentId) &&
            (query.outcome === undefined || event.outcome === query.outcome)
          ) {
            found.push(placed)
          }
        }
      }
      // Batches newest event first, a round at a time as many as hold `limit` events: a batch can hold an event of
      // the page only if its newest one is no older than the page's last, so once `limit` events are found the rest
      // are read only down to that one (batches' times overlap where nodes report late).
      const matching = sql`project_id = ${projectId} AND last_at >= ${query.since}::timestamptz
        AND (${query.before?.createdAt ?? null}::timestamptz IS NULL
          OR first_at <= ${query.before?.createdAt ?? null}::timestamptz)
        AND (${query.deploymentId ?? null}::text IS NULL OR ${query.deploymentId ?? null} = ANY (deployments))
        AND (${query.outcome ?? null}::text IS NULL OR ${query.outcome ?? null} = ANY (outcomes))`
      const need = Math.max(query.limit, 1)
      let from: Position | undefined
      let exhausted = false
      while (found.length < query.limit && !exhausted) {
        const rows = yield* sql<PageLine>`SELECT b.seq::text AS seq, b.last_at::text AS last_at, b.count, line AS event
          FROM (
            SELECT seq, sum(count) OVER (ORDER BY last_at DESC, seq DESC) - count AS before
            FROM (SELECT seq, last_at, count FROM worker_log_batches WHERE ${matching}
                AND (${from?.lastAt ?? null}::timestamptz IS NULL
                  OR (last_at, seq) < (${from?.lastAt ?? null}::timestamptz, ${from?.seq ?? "0"}::bigint))
              ORDER BY last_at DESC, seq DESC LIMIT ${need}) newest
          ) counted JOIN worker_log_batches b USING (seq)
          CROSS JOIN LATERAL unnest(string_to_array(b.events, chr(10))) AS line
          WHERE counted.before < ${need}
          ORDER BY b.last_at DESC, b.seq DESC`
        take(rows)
        const last = rows.at(-1)
        if (last !== undefined) from = { lastAt: last.lastAt, seq: last.seq }
        const counts = new Map(rows.map((row) => [row.seq, row.count]))
        exhausted = [...counts.values()].reduce((sum, count) => sum + count, 0) < need
      }
      found.sort(newestFirst)
      const bound = found[query.limit - 1]
      if (bound !== undefined && from !== undefined && !exhausted) {
        take(
          yield* sql<EventLine>`SELECT unnest(string_to_array(events, chr(10))) AS event FROM worker_log_batches
            WHERE ${matching}
            AND last_at >= ${bound.event.timestamp}::timestamptz
            AND (last_at, seq) < (${from.lastAt}::timestamptz, ${from.seq}::bigint)`
        )
        found.sort(newestFirst)
      }
      return found.slice(0, query.limit).map((placed) => placed.event)
    })

    return LogStore.of({
      insert: (rows) => {
        if (rows.length === 0) return Effect.succeed(0)
        // One row per project: its events in recording order. Every column is one array (or, for the events, one
        // text) over the rows, so the statement is the same whatever the batch.
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
        const ids: Array<string> = []
        const deployments: Array<string> = []
        const deploymentCounts: Array<number> = []
        const outcomes: Array<string> = []
        const outcomeCounts: Array<number> = []
        const texts: Array<string> = []
        const notes: Array<string> = []
        const noteProjects: Array<string> = []
        for (const [projectId, events] of byProject) {
          let first = events[0]!
          let last = first
          let firstAt = Date.parse(first.timestamp)
          let lastAt = firstAt
          const seenDeployments = new Set<string>()
          const seenOutcomes = new Set<string>()
          const lines: Array<string> = []
          const key = batchOf(first.id)
          let shared = first.id.length > 4
          for (const event of events) {
            if (shared && batchOf(event.id) !== key) shared = false
            const time = Date.parse(event.timestamp)
            if (time < firstAt) [first, firstAt] = [event, time]
            if (time > lastAt) [last, lastAt] = [event, time]
            seenDeployments.add(event.deploymentId)
            seenOutcomes.add(event.outcome)
            ids.push(event.id)
            lines.push(JSON.stringify(event))
          }
          projects.push(projectId)
          firsts.push(first.timestamp)
          lasts.push(last.timestamp)
          counts.push(events.length)
          keys.push(shared ? key : "")
          deployments.push(...seenDeployments)
          deploymentCounts.push(seenDeployments.size)
          outcomes.push(...seenOutcomes)
          outcomeCounts.push(seenOutcomes.size)
          // JSON text has no raw newline or record separator (JSON.stringify escapes every control character).
          texts.push(lines.join("\n"))
          // One notification per project and `idsPerNote` events (not one per event): a busy node records hundreds
          // of events a second, and every notification is a message to each listening server.
          for (let at = 0; at < events.length; at += idsPerNote) {
            notes.push(
              `${projectId} ${events
                .slice(at, at + idsPerNote)
                .map((event) => event.id)
                .join(" ")}`
            )
            noteProjects.push(projectId)
          }
        }
        const insert = sql<{ readonly recorded: number }>`
          WITH flat AS MATERIALIZED (
            SELECT ${textArray(ids)}::text[] AS ids, ${textArray(deployments)}::text[] AS deployments,
              ${textArray(outcomes)}::text[] AS outcomes
          ), input AS (
            SELECT *, (sum(count) OVER (ORDER BY ordinality) - count)::int AS id_from,
              (sum(deployment_count) OVER (ORDER BY ordinality) - deployment_count)::int AS deployment_from,
              (sum(outcome_count) OVER (ORDER BY ordinality) - outcome_count)::int AS outcome_from
            FROM unnest(${textArray(projects)}::text[], ${textArray(firsts)}::timestamptz[],
              ${textArray(lasts)}::timestamptz[], ${`{${counts.join(",")}}`}::int[], ${textArray(keys)}::text[],
              ${`{${deploymentCounts.join(",")}}`}::int[], ${`{${outcomeCounts.join(",")}}`}::int[],
              string_to_array(${texts.join("\x1e")}, chr(30)))
              WITH ORDINALITY AS input (project_id, first_at, last_at, count, batch, deployment_count, outcome_count, events,
                ordinality)
          ), inserted AS (
            INSERT INTO worker_log_batches (project_id, first_at, last_at, count, batch, ids, deployments, outcomes,
              events)
            SELECT project_id, first_at, last_at, count, nullif(batch, ''), flat.ids[id_from + 1 : id_from + count],
              flat.deployments[deployment_from + 1 : deployment_from + deployment_count],
              flat.outcomes[outcome_from + 1 : outcome_from + outcome_count], events
            FROM input CROSS JOIN flat
            WHERE EXISTS (SELECT 1 FROM projects WHERE projects.id = input.project_id)
            ORDER BY ordinality
            RETURNING project_id, count
          ), sent AS (
            SELECT count(pg_notify(${channel}, payload || ' ~' || pg_current_xact_id()::text)) AS notes
            FROM (SELECT payload FROM unnest(${textArray(notes)}::text[], ${textArray(noteProjects)}::text[])
              WITH ORDINALITY AS note (payload, project_id, ordinality)
              WHERE project_id IN (SELECT project_id FROM inserted) ORDER BY ordinality) ordered
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
        const wanted = textArray(ids)
        // Two lookups, each on the (project, batch) index: the rows of the ids' batches, and the rows without one;
        // PostgreSQL keeps only the events asked for of each.
        return sql<EventLine>`SELECT line AS event FROM (
            SELECT seq, events, ids FROM worker_log_batches
            WHERE project_id = ${projectId} AND batch = ANY (${textArray([...new Set(ids.map(batchOf))])}::text[])
              AND ids && ${wanted}::text[]
            UNION ALL
            SELECT seq, events, ids FROM worker_log_batches
            WHERE project_id = ${projectId} AND batch IS NULL AND ids && ${wanted}::text[]
          ) found CROSS JOIN LATERAL unnest(string_to_array(found.events, chr(10)), found.ids)
            WITH ORDINALITY AS event (line, id, place)
          WHERE event.id = ANY (${wanted}::text[])
          ORDER BY found.seq, event.place`.pipe(Effect.map(parsed), Effect.orDie)
      },
      purge: ({ since, keep }) =>
        transaction(sql)(
          Effect.gen(function* () {
            const [aged] = yield* sql<Deleted>`WITH gone AS (
                DELETE FROM worker_log_batches WHERE first_at < ${since}::timestamptz AND last_at < ${since}::timestamptz
                RETURNING count
              ) SELECT coalesce(sum(count), 0)::int AS count FROM gone`
            // A batch with events on both sides of the window keeps only its recent ones.
            const [cut] = yield* sql<Deleted>`WITH kept AS (
                SELECT b.seq, b.count AS was, count(*)::int AS count, min(line.at) AS first_at, max(line.at) AS last_at,
                  array_agg(b.ids[line.place::int] ORDER BY line.place) AS ids,
                  array_agg(DISTINCT line.deployment) AS deployments, array_agg(DISTINCT line.outcome) AS outcomes,
                  string_agg(line.text, chr(10) ORDER BY line.place) AS events
                FROM worker_log_batches b CROSS JOIN LATERAL (
                  SELECT text, place, (text::json ->> 'timestamp')::timestamptz AS at,
                    text::json ->> 'deploymentId' AS deployment, text::json ->> 'outcome' AS outcome
                  FROM unnest(string_to_array(b.events, chr(10))) WITH ORDINALITY AS line (text, place)
                ) line
                WHERE b.first_at < ${since}::timestamptz AND line.at >= ${since}::timestamptz
                GROUP BY b.seq
              ), cut AS (
                UPDATE worker_log_batches b SET count = kept.count, first_at = kept.first_at, last_at = kept.last_at,
                  ids = kept.ids, deployments = kept.deployments, outcomes = kept.outcomes, events = kept.events
                FROM kept WHERE b.seq = kept.seq
                RETURNING kept.was - kept.count AS dropped
              ) SELECT coalesce(sum(dropped), 0)::int AS count FROM cut`
            // Every batch with a recent event now starts at it: one still starting earlier holds none (its bounds were
            // wider than its events once the count's trim took its newest-timed ones).
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
            // across that line loses its oldest events (a batch's events are in recording order).
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
                  ids = b.ids[(ranked.upto - ${keep})::int + 1 :],
                  events = array_to_string((string_to_array(b.events, chr(10)))[(ranked.upto - ${keep})::int + 1 :], chr(10))
                FROM ranked
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
