import { Errors, Projects } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, type MemoryStore, read, write } from "./MemoryState.ts"

const nameTaken = () => new Errors.ProjectNameTaken({ message: "a project with this name already exists" })
const hostnameTaken = () => new Errors.HostnameTaken({ message: "this hostname is already in use" })

export const make = (store: MemoryStore): Projects.ProjectStore["Service"] =>
  Projects.ProjectStore.of({
    insert: (project) =>
      Effect.flatMap(
        write(store, (tables) => {
          for (const row of tables.projects.values()) {
            if (row.orgId === project.orgId && row.name === project.name) return nameTaken()
          }
          if (tables.hostnames.has(project.hostname)) return hostnameTaken()
          tables.projects.set(project.id, project)
          tables.hostnames.set(project.hostname, {
            name: project.hostname,
            projectId: project.id,
            orgId: project.orgId,
            kind: "default",
            status: "active",
            verifyToken: null,
            lastError: null,
            createdAt: project.createdAt,
            verifiedAt: project.createdAt
          })
          return undefined
        }),
        (error) => (error === undefined ? Effect.void : Effect.fail(error))
      ),
    findByName: (orgId, name) =>
      read(store, (tables) =>
        Option.fromNullishOr([...tables.projects.values()].find((row) => row.orgId === orgId && row.name === name))
      ),
    findById: (projectId) => read(store, (tables) => Option.fromNullishOr(tables.projects.get(projectId))),
    list: (orgId) =>
      read(store, (tables) =>
        [...tables.projects.values()].filter((row) => row.orgId === orgId).sort((a, b) => (a.name < b.name ? -1 : 1))
      ),
    count: (orgId) =>
      read(store, (tables) => [...tables.projects.values()].filter((row) => row.orgId === orgId).length),
    markDeleting: (projectId, at) =>
      write(store, (tables) => {
        const row = tables.projects.get(projectId)
        if (row !== undefined && row.deletingSince === null)
          tables.projects.set(projectId, { ...row, deletingSince: at })
      }),
    setLiveDeployment: (projectId, deploymentId) =>
      write(store, (tables) => {
        const row = tables.projects.get(projectId)
        if (row !== undefined) tables.projects.set(projectId, { ...row, liveDeploymentId: deploymentId })
      }),
    removeHostnames: (projectId) =>
      write(store, (tables) => {
        for (const [name, row] of tables.hostnames) if (row.projectId === projectId) tables.hostnames.delete(name)
      }),
    remove: (projectId) =>
      write(store, (tables) => {
        tables.projects.delete(projectId)
        for (const [id, row] of tables.deployments) if (row.projectId === projectId) tables.deployments.delete(id)
        for (const [name, row] of tables.hostnames) if (row.projectId === projectId) tables.hostnames.delete(name)
        for (const [key, row] of tables.secrets) if (row.projectId === projectId) tables.secrets.delete(key)
        tables.accessPolicies.delete(projectId)
        for (const [hash, row] of tables.accessCodes) if (row.projectId === projectId) tables.accessCodes.delete(hash)
        for (const [hash, row] of tables.edgeSessions) if (row.projectId === projectId) tables.edgeSessions.delete(hash)
      })
  })

export const layer: Layer.Layer<Projects.ProjectStore, never, MemoryState> = Layer.effect(
  Projects.ProjectStore,
  Effect.map(Effect.service(MemoryState), make)
)
