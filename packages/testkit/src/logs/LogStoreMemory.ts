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

/** `LogStore` on the shared memory state; the feed is this process's, as every memory store is. */
export const make = (store: MemoryStore, notes: PubSub.PubSub<Logs.LogNote>): Logs.LogStore["Service"] =>
  Logs.LogStore.of({
    insert: (rows) =>
      write(store, (tables) => {
        const kept = rows.filter((row) => tables(projectRows).has(row.projectId))
        tables(eventRows).push(
          ...kept.map((row) => ({ seq: nextSeq(store), projectId: row.projectId, event: row.event }))
        )
        return kept
      }).pipe(
        Effect.tap((kept) =>
          PubSub.publishAll(
            notes,
            kept.map((row) => ({ projectId: row.projectId, id: row.event.id }))
          )
        ),
        Effect.map((kept) => kept.length)
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
    watch: Effect.map(PubSub.subscribe(notes), (subscription) => ({ next: PubSub.takeAll(subscription) }))
  })

export const layer: Layer.Layer<Logs.LogStore, never, MemoryState> = Layer.effect(
  Logs.LogStore,
  Effect.gen(function* () {
    const state = yield* MemoryState
    const notes = yield* PubSub.unbounded<Logs.LogNote>()
    return make(state, notes)
  })
)
