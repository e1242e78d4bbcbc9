import { Access, Kernel } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"
import { hostnameRows } from "../hostnames/HostnameStoreMemory.ts"

/** Keyed by project id. */
export const accessPolicyRows = memoryTable("access.policies", () => new Map<string, Access.AccessPolicyRow>())
/** Keyed by code hash. */
export const accessCodeRows = memoryTable("access.codes", () => new Map<string, Access.AccessCodeRow>())

/** `AccessStore` on the shared memory state; `findActiveHost` reads the hostnames table the project store writes. */
export const make = (store: MemoryStore): Access.AccessStore["Service"] =>
  Access.AccessStore.of({
    findPolicy: (projectId) => read(store, (tables) => Option.fromNullishOr(tables(accessPolicyRows).get(projectId))),
    setPolicy: (projectId, mode, passwordHash, at) =>
      write(store, (tables) => {
        const current = tables(accessPolicyRows).get(projectId)
        const row: Access.AccessPolicyRow = {
          projectId,
          mode,
          passwordHash: passwordHash ?? current?.passwordHash ?? null,
          passwordGeneration: (current?.passwordGeneration ?? 0) + (passwordHash === null ? 0 : 1),
          bypassHash: current?.bypassHash ?? null,
          updatedAt: at
        }
        tables(accessPolicyRows).set(projectId, row)
        return row
      }),
    setBypass: (projectId, bypassHash, at) =>
      write(store, (tables) => {
        const current = tables(accessPolicyRows).get(projectId)
        if (current === undefined && bypassHash === null) return
        tables(accessPolicyRows).set(projectId, {
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
        tables(accessCodeRows).set(code.codeHash, { ...code })
      }),
    takeCode: (codeHash, host) =>
      write(store, (tables) => {
        const row = tables(accessCodeRows).get(codeHash)
        if (row === undefined || row.host !== host) return Option.none()
        tables(accessCodeRows).delete(codeHash)
        return Option.some(row)
      }),
    purgeCodes: (at) =>
      write(store, (tables) => {
        const limit = Kernel.isoToMillis(at)
        for (const [hash, row] of tables(accessCodeRows)) {
          if (Kernel.isoToMillis(row.expiresAt) <= limit) tables(accessCodeRows).delete(hash)
        }
      }),
    findActiveHost: (name) =>
      read(store, (tables) => {
        const row = tables(hostnameRows).get(name)
        return row === undefined || row.status !== "active"
          ? Option.none()
          : Option.some({ name: row.name, projectId: row.projectId, orgId: row.orgId })
      })
  })

export const layer: Layer.Layer<Access.AccessStore, never, MemoryState> = Layer.effect(
  Access.AccessStore,
  Effect.map(MemoryState, make)
)
