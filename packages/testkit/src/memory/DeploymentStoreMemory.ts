import { Deployments } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, type MemoryStore, read, write } from "./MemoryState.ts"

const ofProject = (store: MemoryStore, projectId: string) =>
  read(store, (tables) =>
    [...tables.deployments.values()].filter((row) => row.projectId === projectId).sort((a, b) => b.version - a.version)
  )

export const make = (store: MemoryStore): Deployments.DeploymentStore["Service"] =>
  Deployments.DeploymentStore.of({
    nextVersion: (projectId) => Effect.map(ofProject(store, projectId), (rows) => (rows[0]?.version ?? 0) + 1),
    insert: (row) =>
      write(store, (tables) => {
        // PostgreSQL's foreign key: a deployment of no project is a bug in the caller.
        if (!tables.projects.has(row.projectId)) throw new Error(`no project ${row.projectId}`)
        tables.deployments.set(row.id, row)
      }),
    get: (projectId, id) =>
      read(store, (tables) =>
        Option.filter(Option.fromNullishOr(tables.deployments.get(id)), (row) => row.projectId === projectId)
      ),
    list: (projectId, limit, beforeVersion = Infinity) =>
      Effect.map(ofProject(store, projectId), (rows) =>
        rows.filter((row) => row.version < beforeVersion).slice(0, limit)
      )
  })

export const layer: Layer.Layer<Deployments.DeploymentStore, never, MemoryState> = Layer.effect(
  Deployments.DeploymentStore,
  Effect.map(Effect.service(MemoryState), make)
)
