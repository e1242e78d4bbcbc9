import { Logs } from "@hostplane/core"
import { Effect, Layer, Option, PubSub } from "effect"
import { MemoryState, memoryTable, type MemoryStore, nextSeq, read, type Tables, write } from "../memory/MemoryState.ts"
import { projectRows } from "../projects/ProjectStoreMemory.ts"

interface Row {
  readonly seq: number
  readonly projectId: string
  readonly event: Logs.LogEvent
}

/** In recording order. */
export const eventRows = memoryTable("logs.events", () => new Array<Row>())

/** A project's rows, in recording order; none once the project is gone, as PostgreSQL's `ON DELETE CASCADE` does. */
const rowsOf = (tables: Tables, projectId: string): ReadonlyArray<Row> =>
  tables(projectRows).has(projectId) ? tables(eventRows).filter((row) => row.projectId === projectId) : []

/** (timestamp, id) descending, ids compared by code unit as PostgreSQL's `COLLATE "C"`. */
const newestFirst = (a: Logs.LogEvent, b: Logs.LogEvent): number =>
  a.timestamp !== b.timestamp ? (a.timestamp < b.timestamp ? 1 : -1) : a.id < b.id ? 1 : a.id > b.id ? -1 : 0

/** A note as the feed hands it on, with its event's place in recording order. */
export interface MemoryLogNote extends Logs.LogNote {
  readonly seq: number
}

/**
 * `LogStore` on the shared memory state; the feed is this process's, as every memory store is. A note is published
 * after its write, so a subscriber keeps the recording position it opened at and drops notes at or before it.
 */
export const make = (store: MemoryStore, notes: PubSub.PubSub<MemoryLogNote>): Logs.LogStore["Service"] =>
  Logs.LogStore.of({
    insert: (rows) =>
      write(store, (tables) => {
        const kept = rows.filter((row) => tables(projectRows).has(row.projectId))
        const recorded = kept.map((row) => ({ projectId: row.projectId, id: row.event.id, seq: nextSeq(store) }))
        tables(eventRows).push(
          ...kept.map((row, index) => ({ seq: recorded[index]!.seq, projectId: row.projectId, event: row.event }))
        )
        return recorded
      }).pipe(
        Effect.tap((recorded) => PubSub.publishAll(notes, recorded)),
        Effect.map((recorded) => recorded.length)
      ),
    list: (projectId, query) =>
      read(store, (tables) =>
        rowsOf(tables, projectId)
          .map((row) => row.event)
          .filter(
            (event) =>
              event.timestamp >= query.since &&
              (query.before === undefined ||
                newestFirst(event, { ...event, timestamp: query.before.createdAt, id: query.before.id }) > 0) &&
              (query.deploymentId === undefined || event.deploymentId === query.deploymentId) &&
              (query.outcome === undefined || event.outcome === query.outcome)
          )
          .sort(newestFirst)
          .slice(0, query.limit)
      ),
    after: (projectId, id, limit) =>
      read(store, (tables) => {
        const rows = rowsOf(tables, projectId)
        const index = rows.findIndex((row) => row.event.id === id)
        return index < 0 ? Option.none() : Option.some(rows.slice(index + 1, index + 1 + limit).map((row) => row.event))
      }),
    byIds: (projectId, ids) =>
      read(store, (tables) => {
        const wanted = new Set<string>(ids)
        return rowsOf(tables, projectId)
          .filter((row) => wanted.has(row.event.id))
          .map((row) => row.event)
      }),
    purge: ({ since, keep }) =>
      write(store, (tables) => {
        const rows = tables(eventRows)
        const counts = new Map<string, number>()
        const kept: Array<Row> = []
        // Newest first, so each project's first `keep` rows are its newest.
        for (const row of [...rows].reverse()) {
          const seen = counts.get(row.projectId) ?? 0
          if (row.event.timestamp < since || seen >= keep || !tables(projectRows).has(row.projectId)) continue
          counts.set(row.projectId, seen + 1)
          kept.push(row)
        }
        const purged = rows.length - kept.length
        rows.splice(0, rows.length, ...kept.reverse())
        return purged
      }),
    removeProject: (projectId) =>
      write(store, (tables) => {
        const rows = tables(eventRows)
        const kept = rows.filter((row) => row.projectId !== projectId)
        rows.splice(0, rows.length, ...kept)
      }),
    watch: Effect.map(PubSub.subscribe(notes), (subscription) => {
      const opened = store.seq
      const next: Effect.Effect<ReadonlyArray<Logs.LogNote>> = Effect.flatMap(PubSub.takeAll(subscription), (heard) => {
        const fresh = heard.filter((note) => note.seq > opened).map(({ projectId, id }) => ({ projectId, id }))
        return fresh.length === 0 ? next : Effect.succeed(fresh)
      })
      return { next }
    })
  })

export const layer: Layer.Layer<Logs.LogStore, never, MemoryState> = Layer.effect(
  Logs.LogStore,
  Effect.gen(function* () {
    const state = yield* MemoryState
    const notes = yield* PubSub.unbounded<MemoryLogNote>()
    return make(state, notes)
  })
)
