import { Deployments } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"
import { projectRows } from "../projects/ProjectStoreMemory.ts"

export const deploymentRows = memoryTable("deployments.deployments", () => new Map<string, Deployments.DeploymentRow>())

const ofProject = (store: MemoryStore, projectId: string) =>
  read(store, (tables) =>
    [...tables(deploymentRows).values()]
      .filter((row) => row.projectId === projectId)
      .sort((a, b) => b.version - a.version)
  )

export const make = (store: MemoryStore): Deployments.DeploymentStore["Service"] =>
  Deployments.DeploymentStore.of({
    nextVersion: (projectId) => Effect.map(ofProject(store, projectId), (rows) => (rows[0]?.version ?? 0) + 1),
    insert: (row) =>
      write(store, (tables) => {
        // PostgreSQL's foreign key: a deployment of no project is a bug in the caller.
        if (!tables(projectRows).has(row.projectId)) throw new Error(`no project ${row.projectId}`)
        tables(deploymentRows).set(row.id, row)
      }),
    get: (projectId, id) =>
      read(store, (tables) =>
        Option.filter(Option.fromNullishOr(tables(deploymentRows).get(id)), (row) => row.projectId === projectId)
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
