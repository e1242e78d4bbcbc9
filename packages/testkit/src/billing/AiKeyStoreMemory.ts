import { Ai } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"

/** Keyed by project id. */
export const aiKeyRows = memoryTable("ai.keys", () => new Map<string, Ai.AiKeyRow>())

/** `AiKeyStore` on the shared memory state. */
export const make = (store: MemoryStore): Ai.AiKeyStore["Service"] =>
  Ai.AiKeyStore.of({
    find: (projectId) => read(store, (tables) => Option.fromNullishOr(tables(aiKeyRows).get(projectId))),
    insert: (row) =>
      write(store, (tables) => {
        tables(aiKeyRows).set(row.projectId, row)
      }),
    remove: (projectId) => write(store, (tables) => tables(aiKeyRows).delete(projectId)),
    projectOfKey: (keyHash) =>
      read(store, (tables) =>
        Option.map(
          Option.fromNullishOr([...tables(aiKeyRows).values()].find((row) => row.keyHash === keyHash)),
          (row) => row.projectId
        )
      )
  })

export const layer: Layer.Layer<Ai.AiKeyStore, never, MemoryState> = Layer.effect(
  Ai.AiKeyStore,
  Effect.map(MemoryState, make)
)
