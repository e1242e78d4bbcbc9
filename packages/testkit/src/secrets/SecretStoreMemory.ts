import { Secrets } from "@hostplane/core"
import { Effect, Layer } from "effect"
import { guarded } from "../kernel/EnvelopeStoreMemory.ts"
import { MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"

/** Keyed by `secretKey(projectId, name)`. */
export const secretRows = memoryTable("secrets.secrets", () => new Map<string, Secrets.SecretRow>())

export const secretKey = (projectId: string, name: string): string => `${projectId}\u0000${name}`

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
    list: (projectId) => read(store, (tables) => rowsOf(tables(secretRows), projectId).map(metaOf)),
    put: (projectId, name, sealed, at, finish) =>
      guarded(
        store,
        finish,
        write(store, (tables) => {
          const key = secretKey(projectId, name)
          const version = (tables(secretRows).get(key)?.version ?? 0) + 1
          const row: Secrets.SecretRow = { projectId, name, version, sealed: { ...sealed }, updatedAt: at }
          tables(secretRows).set(key, row)
          return metaOf(row)
        })
      ),
    remove: (projectId, name) => write(store, (tables) => tables(secretRows).delete(secretKey(projectId, name))),
    listSealed: (projectId) => read(store, (tables) => rowsOf(tables(secretRows), projectId))
  })

export const layer: Layer.Layer<Secrets.SecretStore, never, MemoryState> = Layer.effect(
  Secrets.SecretStore,
  Effect.map(MemoryState, make)
)
