import { Edge } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"
import { projectRows } from "../projects/ProjectStoreMemory.ts"

/** Keyed by token hash. */
export const edgeSessionRows = memoryTable("edge.sessions", () => new Map<string, Edge.EdgeSessionRow>())

export const make = (store: MemoryStore): Edge.EdgeSessionStore["Service"] =>
  Edge.EdgeSessionStore.of({
    insert: (row) =>
      write(store, (tables) => {
        // PostgreSQL's foreign key: a session of no project is a bug in the caller.
        if (!tables(projectRows).has(row.projectId)) throw new Error(`no project ${row.projectId}`)
        tables(edgeSessionRows).set(row.tokenHash, row)
      }),
    find: (tokenHash, host, now) =>
      read(store, (tables) =>
        Option.filter(
          Option.fromNullishOr(tables(edgeSessionRows).get(tokenHash)),
          (row) => row.host === host && row.expiresAt > now
        )
      )
  })

export const layer: Layer.Layer<Edge.EdgeSessionStore, never, MemoryState> = Layer.effect(
  Edge.EdgeSessionStore,
  Effect.map(Effect.service(MemoryState), make)
)
