import { Access, Kernel } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, type MemoryStore, read, write } from "./MemoryState.ts"

/** `AccessStore` on the shared memory state; `findActiveHost` reads the hostnames table the project store writes. */
export const make = (store: MemoryStore): Access.AccessStore["Service"] =>
  Access.AccessStore.of({
    findPolicy: (projectId) => read(store, (tables) => Option.fromNullishOr(tables.accessPolicies.get(projectId))),
    setPolicy: (projectId, mode, passwordHash, at) =>
      write(store, (tables) => {
        const current = tables.accessPolicies.get(projectId)
        const row: Access.AccessPolicyRow = {
          projectId,
          mode,
          passwordHash: passwordHash ?? current?.passwordHash ?? null,
          passwordGeneration: (current?.passwordGeneration ?? 0) + (passwordHash === null ? 0 : 1),
          bypassHash: current?.bypassHash ?? null,
          updatedAt: at
        }
        tables.accessPolicies.set(projectId, row)
        return row
      }),
    setBypass: (projectId, bypassHash, at) =>
      write(store, (tables) => {
        const current = tables.accessPolicies.get(projectId)
        if (current === undefined && bypassHash === null) return
        tables.accessPolicies.set(projectId, {
          projectId,
          mode: current?.mode ?? "public",
          passwordHash: current?.passwordHash ?? null,
          passwordGeneration: current?.passwordGeneration ?? 0,
          bypassHash,
          updatedAt: at
        })
      }),
    insertCode: (code) =>
      write(store, (tables) => {
        tables.accessCodes.set(code.codeHash, { ...code })
      }),
    takeCode: (codeHash, host) =>
      write(store, (tables) => {
        const row = tables.accessCodes.get(codeHash)
        if (row === undefined || row.host !== host) return Option.none()
        tables.accessCodes.delete(codeHash)
        return Option.some(row)
      }),
    purgeCodes: (at) =>
      write(store, (tables) => {
        const limit = Kernel.isoToMillis(at)
        for (const [hash, row] of tables.accessCodes) {
          if (Kernel.isoToMillis(row.expiresAt) <= limit) tables.accessCodes.delete(hash)
        }
      }),
    findActiveHost: (name) =>
      read(store, (tables) => {
        const row = tables.hostnames.get(name)
        return row === undefined || row.status !== "active"
          ? Option.none()
          : Option.some({ name: row.name, projectId: row.projectId, orgId: row.orgId })
      })
  })

export const layer: Layer.Layer<Access.AccessStore, never, MemoryState> = Layer.effect(
  Access.AccessStore,
  Effect.map(MemoryState, make)
)
