import { Edge } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, type MemoryStore, read, write } from "./MemoryState.ts"

export const make = (store: MemoryStore): Edge.EdgeSessionStore["Service"] =>
  Edge.EdgeSessionStore.of({
    insert: (row) =>
      write(store, (tables) => {
        // PostgreSQL's foreign key: a session of no project is a bug in the caller.
        if (!tables.projects.has(row.projectId)) throw new Error(`no project ${row.projectId}`)
        tables.edgeSessions.set(row.tokenHash, row)
      }),
    find: (tokenHash, host, now) =>
      read(store, (tables) =>
        Option.filter(
          Option.fromNullishOr(tables.edgeSessions.get(tokenHash)),
          (row) => row.host === host && row.expiresAt > now
        )
      )
  })

export const layer: Layer.Layer<Edge.EdgeSessionStore, never, MemoryState> = Layer.effect(
  Edge.EdgeSessionStore,
  Effect.map(Effect.service(MemoryState), make)
)
