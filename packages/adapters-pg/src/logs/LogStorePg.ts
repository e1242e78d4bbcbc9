import { PgClient } from "@effect/sql-pg"
import type { LogEvent } from "@hostplane/core/logs/LogEvent"
import { type LogNote, LogStore } from "@hostplane/core/logs/LogStore"
import { makeId } from "@hostplane/core/kernel/Ids"
import { Deferred, Effect, Layer, Option, PubSub, Queue, Schedule, Schema } from "effect"
import { SqlSchema } from "effect/sql"
import { transaction } from "../internal/Transaction.ts"
import { unsharedClient } from "../UnsharedClient.ts"

/** The channel recorded events are announced on when their insert commits (payload: `notesOf`). */
export const channel = "hostplane_worker_logs"

/** Read as text: the driver would parse `json`, and the client's name transforms would rename a logged object's keys. */
const EventRow = Schema.Struct({ event: Schema.String })
const SeqRow = Schema.Struct({ seq: Schema.String })
interface Deleted {
  readonly count: number
}

const eventsOf = (rows: ReadonlyArray<typeof EventRow.Type>): ReadonlyArray<LogEvent> =>
  rows.map((row) => JSON.parse(row.event) as LogEvent)

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

    const find = SqlSchema.findAll({
      Request: Schema.Struct({ projectId: Schema.String, ids: Schema.Array(Schema.String) }),
      Result: EventRow,
      execute: ({ projectId, ids }) =>
        sql`SELECT event::text AS event FROM worker_log_events
          WHERE project_id = ${projectId} AND id IN ${sql.in(ids)} ORDER BY seq`
    })

    return LogStore.of({
      insert: (rows) => {
        if (rows.length === 0) return Effect.succeed(0)
        // One array per column, unnested in the statement: PostgreSQL reads each event's JSON once (its column's
        // check), where one JSON array of row objects had it split and every field read out again (about a third
        // more of its CPU per event, at thousands of events a second).
        const ids = textArray(rows.map(({ event }) => event.id))
        const projects = textArray(rows.map(({ projectId }) => projectId))
        const deployments = textArray(rows.map(({ event }) => event.deploymentId))
        const times = textArray(rows.map(({ event }) => event.timestamp))
        const outcomes = textArray(rows.map(({ event }) => event.outcome))
        const events = textArray(rows.map(({ event }) => JSON.stringify(event)))
        // One notification per project and `idsPerNote` events (not one per event): a busy node records hundreds of
        // events a second, and every notification is a message to each listening server. Only the count comes back.
        const insert = sql<{ readonly recorded: number }>`
          WITH input AS (
            SELECT * FROM unnest(${ids}::text[], ${projects}::text[], ${deployments}::text[], ${times}::timestamptz[],
              ${outcomes}::text[], ${events}::json[]) WITH ORDINALITY
              AS input (id, project_id, deployment_id, at, outcome, event, ordinality)
          ), inserted AS (
            INSERT INTO worker_log_events (id, project_id, deployment_id, at, outcome, event)
            SELECT id, project_id, deployment_id, at, outcome, event
            FROM input
            WHERE EXISTS (SELECT 1 FROM projects WHERE projects.id = input.project_id)
            ORDER BY ordinality
            RETURNING seq, id, project_id
          ), placed AS (
            SELECT seq, id, project_id,
              (row_number() OVER (PARTITION BY project_id ORDER BY seq) - 1) / ${sql.literal(String(idsPerNote))} AS note
            FROM inserted
          ), notes AS (
            SELECT project_id || ' ' || string_agg(id, ' ' ORDER BY seq) || ' ~' || pg_current_xact_id()::text AS payload,
              min(seq) AS first
            FROM placed GROUP BY project_id, note
          ), sent AS (
            SELECT count(pg_notify(${channel}, payload)) AS notes FROM (SELECT payload FROM notes ORDER BY first) ordered
          )
          SELECT (SELECT count(*) FROM inserted)::int AS recorded, (SELECT notes FROM sent) AS notes`
        // A project deleted between the check and the insert fails its foreign key: once more, without it.
        return insert.pipe(
          Effect.catchReason("SqlError", "ConstraintError", () => insert),
          Effect.map((result) => result[0]?.recorded ?? 0),
          Effect.orDie
        )
      },
      list: (projectId, query) =>
        sql<typeof EventRow.Type>`SELECT event::text AS event FROM worker_log_events
          WHERE project_id = ${projectId} AND at >= ${query.since}::timestamptz
            AND (${query.before?.createdAt ?? null}::timestamptz IS NULL
              OR (at, id COLLATE "C") < (${query.before?.createdAt ?? null}::timestamptz, ${query.before?.id ?? ""}))
            AND (${query.deploymentId ?? null}::text IS NULL OR deployment_id = ${query.deploymentId ?? null})
            AND (${query.outcome ?? null}::text IS NULL OR outcome = ${query.outcome ?? null})
          ORDER BY at DESC, id COLLATE "C" DESC
          LIMIT ${query.limit}`.pipe(Effect.map(eventsOf), Effect.orDie),
      after: (projectId, id, limit) =>
        Effect.gen(function* () {
          const mark = yield* sql<typeof SeqRow.Type>`SELECT seq::text AS seq FROM worker_log_events
            WHERE id = ${id} AND project_id = ${projectId}`
          if (mark[0] === undefined) return Option.none()
          const rows = yield* sql<typeof EventRow.Type>`SELECT event::text AS event FROM worker_log_events
            WHERE project_id = ${projectId} AND seq > ${mark[0].seq}::bigint ORDER BY seq LIMIT ${limit}`
          return Option.some(eventsOf(rows))
        }).pipe(Effect.orDie),
      byIds: (projectId, ids) =>
        ids.length === 0 ? Effect.succeed([]) : find({ projectId, ids }).pipe(Effect.map(eventsOf), Effect.orDie),
      purge: ({ since, keep }) =>
        transaction(sql)(
          Effect.gen(function* () {
            const [aged] = yield* sql<Deleted>`WITH gone AS (
                DELETE FROM worker_log_events WHERE at < ${since}::timestamptz RETURNING 1
              ) SELECT count(*)::int AS count FROM gone`
            // One purger at a time; it reads how far the last one looked, with an overlap for inserts that took a
            // sequence number before it looked but committed after.
            const [mark] = yield* sql<
              typeof SeqRow.Type
            >`SELECT last_seq::text AS seq FROM worker_log_purges FOR UPDATE`
            const [top] = yield* sql<{
              readonly seq: string | null
            }>`SELECT max(seq)::text AS seq FROM worker_log_events`
            const from = Math.max(Number(mark?.seq ?? 0) - 10_000, 0)
            const [counted] = yield* sql<Deleted>`
              WITH gone AS (DELETE FROM worker_log_events e USING (
                SELECT recent.project_id,
                  (SELECT w.seq FROM worker_log_events w WHERE w.project_id = recent.project_id
                    ORDER BY w.seq DESC OFFSET ${keep - 1} LIMIT 1) AS floor
                FROM (SELECT DISTINCT project_id FROM worker_log_events WHERE seq > ${from}) recent
              ) f
              WHERE e.project_id = f.project_id AND e.seq < f.floor
              RETURNING 1) SELECT count(*)::int AS count FROM gone`
            if (top?.seq !== null && top?.seq !== undefined) {
              yield* sql`UPDATE worker_log_purges SET last_seq = greatest(last_seq, ${top.seq}::bigint)`
            }
            return (aged?.count ?? 0) + (counted?.count ?? 0)
          })
        ).pipe(Effect.orDie),
      removeProject: (projectId) =>
        sql`DELETE FROM worker_log_events WHERE project_id = ${projectId}`.pipe(Effect.asVoid, Effect.orDie),
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
