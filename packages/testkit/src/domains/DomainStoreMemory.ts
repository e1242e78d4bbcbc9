import { Domains } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"

/** Keyed by name: one org holds a name at a time. */
export const domainRows = memoryTable("domains.domains", () => new Map<string, Domains.DomainRow>())

const byName = (a: Domains.DomainRow, b: Domains.DomainRow) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

const copy = (row: Domains.DomainRow): Domains.DomainRow => structuredClone(row)

/** `DomainStore` on the shared memory state. */
export const make = (store: MemoryStore): Domains.DomainStore["Service"] =>
  Domains.DomainStore.of({
    find: (name) => read(store, (tables) => Option.map(Option.fromNullishOr(tables(domainRows).get(name)), copy)),
    list: (orgId) =>
      read(store, (tables) => [...tables(domainRows).values()].filter((row) => row.orgId === orgId).sort(byName)),
    listRegistered: read(store, (tables) =>
      [...tables(domainRows).values()]
        .filter((row) => row.source === "purchase" && row.status !== "registering")
        .sort(byName)
    ),
    insert: (row) =>
      write(store, (tables) => {
        if (tables(domainRows).has(row.name)) return false
        tables(domainRows).set(row.name, copy(row))
        return true
      }),
    save: (row) =>
      write(store, (tables) => {
        if (!tables(domainRows).has(row.name)) return false
        tables(domainRows).set(row.name, copy(row))
        return true
      }),
    remove: (name) => write(store, (tables) => tables(domainRows).delete(name))
  })

export const layer: Layer.Layer<Domains.DomainStore, never, MemoryState> = Layer.effect(
  Domains.DomainStore,
  Effect.map(MemoryState, make)
)
