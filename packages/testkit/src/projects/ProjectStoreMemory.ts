import { Errors, Projects } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"
import { accessCodeRows, accessPolicyRows } from "../access/AccessStoreMemory.ts"
import { deploymentRows } from "../deployments/DeploymentStoreMemory.ts"
import { edgeSessionRows } from "../edge/EdgeSessionStoreMemory.ts"
import { hostnameRows } from "../hostnames/HostnameStoreMemory.ts"
import { secretRows } from "../secrets/SecretStoreMemory.ts"

export const projectRows = memoryTable("projects.projects", () => new Map<string, Projects.ProjectRow>())

const nameTaken = () => new Errors.ProjectNameTaken({ message: "a project with this name already exists" })
const hostnameTaken = () => new Errors.HostnameTaken({ message: "this hostname is already in use" })

export const make = (store: MemoryStore): Projects.ProjectStore["Service"] =>
  Projects.ProjectStore.of({
    insert: (project) =>
      Effect.flatMap(
        write(store, (tables) => {
          for (const row of tables(projectRows).values()) {
            if (row.orgId === project.orgId && row.name === project.name) return nameTaken()
          }
          if (tables(hostnameRows).has(project.hostname)) return hostnameTaken()
          tables(projectRows).set(project.id, project)
          tables(hostnameRows).set(project.hostname, {
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
        Option.fromNullishOr([...tables(projectRows).values()].find((row) => row.orgId === orgId && row.name === name))
      ),
    findById: (projectId) => read(store, (tables) => Option.fromNullishOr(tables(projectRows).get(projectId))),
    list: (orgId) =>
      read(store, (tables) =>
        [...tables(projectRows).values()]
          .filter((row) => row.orgId === orgId)
          .sort((a, b) => (a.name < b.name ? -1 : 1))
      ),
    count: (orgId) =>
      read(store, (tables) => [...tables(projectRows).values()].filter((row) => row.orgId === orgId).length),
    markDeleting: (projectId, at) =>
      write(store, (tables) => {
        const row = tables(projectRows).get(projectId)
        if (row !== undefined && row.deletingSince === null)
          tables(projectRows).set(projectId, { ...row, deletingSince: at })
      }),
    setLiveDeployment: (projectId, deploymentId) =>
      write(store, (tables) => {
        const row = tables(projectRows).get(projectId)
        if (row !== undefined) tables(projectRows).set(projectId, { ...row, liveDeploymentId: deploymentId })
      }),
    removeHostnames: (projectId) =>
      write(store, (tables) => {
        for (const [name, row] of tables(hostnameRows))
          if (row.projectId === projectId) tables(hostnameRows).delete(name)
      }),
    remove: (projectId) =>
      write(store, (tables) => {
        tables(projectRows).delete(projectId)
        for (const [id, row] of tables(deploymentRows))
          if (row.projectId === projectId) tables(deploymentRows).delete(id)
        for (const [name, row] of tables(hostnameRows))
          if (row.projectId === projectId) tables(hostnameRows).delete(name)
        for (const [key, row] of tables(secretRows)) if (row.projectId === projectId) tables(secretRows).delete(key)
        tables(accessPolicyRows).delete(projectId)
        for (const [hash, row] of tables(accessCodeRows))
          if (row.projectId === projectId) tables(accessCodeRows).delete(hash)
        for (const [hash, row] of tables(edgeSessionRows))
          if (row.projectId === projectId) tables(edgeSessionRows).delete(hash)
      })
  })

export const layer: Layer.Layer<Projects.ProjectStore, never, MemoryState> = Layer.effect(
  Projects.ProjectStore,
  Effect.map(Effect.service(MemoryState), make)
)
