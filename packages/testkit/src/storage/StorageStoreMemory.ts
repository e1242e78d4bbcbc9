import { Storage } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, memoryTable, type MemoryStore, read, type Tables, write } from "../memory/MemoryState.ts"
import { projectRows } from "../projects/ProjectStoreMemory.ts"

/** Keyed by project id. */
export const storageRows = memoryTable("storage.grants", () => new Map<string, Storage.StorageRow>())

/** A row whose project is gone is gone too, as PostgreSQL's `ON DELETE CASCADE` does. */
const rowOf = (tables: Tables, projectId: string) => {
  const row = tables(storageRows).get(projectId)
  return row !== undefined && tables(projectRows).has(projectId) ? row : undefined
}

/** `StorageStore` on the shared memory state. */
export const make = (store: MemoryStore): Storage.StorageStore["Service"] =>
  Storage.StorageStore.of({
    find: (projectId) => read(store, (tables) => Option.fromNullishOr(rowOf(tables, projectId))),
    setGranted: (projectId, prefix, granted) =>
      write(store, (tables) => {
        const row = rowOf(tables, projectId)
        tables(storageRows).set(
          projectId,
          row === undefined ? { projectId, prefix, granted, usedBytes: 0 } : { ...row, granted }
        )
      }),
    recordUsage: (lines) =>
      write(store, (tables) =>
        lines.flatMap((line) => {
          const row = rowOf(tables, line.projectId)
          if (row === undefined) return []
          tables(storageRows).set(line.projectId, { ...row, usedBytes: line.storageBytes })
          return [line.projectId]
        })
      )
  })

export const layer: Layer.Layer<Storage.StorageStore, never, MemoryState> = Layer.effect(
  Storage.StorageStore,
  Effect.map(Effect.service(MemoryState), make)
)
