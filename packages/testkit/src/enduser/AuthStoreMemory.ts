import { EndUser } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"

/** Keyed by project id. */
export const authGrants = memoryTable("enduser.grants", () => new Map<string, EndUser.AuthGrantRow>())

/** Keyed by `<project id> <provider>`. */
export const authProviders = memoryTable("enduser.providers", () => new Map<string, EndUser.AuthProviderRow>())

const key = (projectId: string, provider: string) => `${projectId} ${provider}`

/** `AuthStore` on the shared memory state. */
export const make = (store: MemoryStore): EndUser.AuthStore["Service"] =>
  EndUser.AuthStore.of({
    find: (projectId) => read(store, (tables) => Option.fromNullishOr(tables(authGrants).get(projectId))),
    save: (row) =>
      write(store, (tables) => {
        const existing = tables(authGrants).get(row.projectId)
        tables(authGrants).set(row.projectId, existing === undefined ? row : { ...existing, settings: row.settings })
      }),
    remove: (projectId) =>
      write(store, (tables) => {
        for (const [k, row] of tables(authProviders)) if (row.projectId === projectId) tables(authProviders).delete(k)
        return tables(authGrants).delete(projectId)
      }),
    providers: (projectId) =>
      read(store, (tables) =>
        [...tables(authProviders).values()]
          .filter((row) => row.projectId === projectId)
          .sort((a, b) => a.provider.localeCompare(b.provider))
      ),
    putProvider: (row) =>
      write(store, (tables) => {
        tables(authProviders).set(key(row.projectId, row.provider), row)
      }),
    removeProvider: (projectId, provider) =>
      write(store, (tables) => tables(authProviders).delete(key(projectId, provider)))
  })

export const layer: Layer.Layer<EndUser.AuthStore, never, MemoryState> = Layer.effect(
  EndUser.AuthStore,
  Effect.map(MemoryState, make)
)
