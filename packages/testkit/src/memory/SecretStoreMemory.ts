import { Secrets } from "@hostplane/core"
import { Effect, Layer } from "effect"
import { MemoryState, type MemoryStore, read, secretKey, write } from "./MemoryState.ts"

const byName = (a: { readonly name: string }, b: { readonly name: string }) =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0

const rowsOf = (secrets: Map<string, Secrets.SecretRow>, projectId: string) =>
  [...secrets.values()].filter((row) => row.projectId === projectId).sort(byName)

const metaOf = (row: Secrets.SecretRow): Secrets.SecretMeta => ({
  name: row.name,
  version: row.version,
  updatedAt: row.updatedAt
})

/** `SecretStore` on the shared memory state; the project delete (`ProjectStore.remove`) drops a project's secrets. */
export const make = (store: MemoryStore): Secrets.SecretStore["Service"] =>
  Secrets.SecretStore.of({
    list: (projectId) => read(store, (tables) => rowsOf(tables.secrets, projectId).map(metaOf)),
    put: (projectId, name, sealed, at) =>
      write(store, (tables) => {
        const key = secretKey(projectId, name)
        const version = (tables.secrets.get(key)?.version ?? 0) + 1
        const row: Secrets.SecretRow = { projectId, name, version, sealed: { ...sealed }, updatedAt: at }
        tables.secrets.set(key, row)
        return metaOf(row)
      }),
    remove: (projectId, name) => write(store, (tables) => tables.secrets.delete(secretKey(projectId, name))),
    listSealed: (projectId) => read(store, (tables) => rowsOf(tables.secrets, projectId))
  })

export const layer: Layer.Layer<Secrets.SecretStore, never, MemoryState> = Layer.effect(
  Secrets.SecretStore,
  Effect.map(MemoryState, make)
)
