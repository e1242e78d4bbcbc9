import { Errors, Hostnames } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"
import { projectRows } from "../projects/ProjectStoreMemory.ts"

/** Keyed by hostname. */
export const hostnameRows = memoryTable("hostnames.hostnames", () => new Map<string, Hostnames.HostnameRow>())

const byListOrder = (a: Hostnames.HostnameRow, b: Hostnames.HostnameRow): number =>
  a.kind !== b.kind
    ? a.kind === "default"
      ? -1
      : 1
    : a.createdAt !== b.createdAt
      ? a.createdAt < b.createdAt
        ? -1
        : 1
      : a.name < b.name
        ? -1
        : a.name > b.name
          ? 1
          : 0

/** Applies `f` to the row `name` when it carries `verifyToken`; answers the row as it then stands. */
const updateOwn = (
  store: MemoryStore,
  name: string,
  verifyToken: string,
  f: (row: Hostnames.HostnameRow) => Hostnames.HostnameRow
) =>
  write(store, (tables) => {
    const row = tables(hostnameRows).get(name)
    if (row === undefined || row.verifyToken !== verifyToken) return Option.none<Hostnames.HostnameRow>()
    const next = f(row)
    tables(hostnameRows).set(name, next)
    return Option.some(next)
  })

/** `HostnameStore` on the shared memory state; names are unique across projects, as the default rows of projects. */
export const make = (store: MemoryStore): Hostnames.HostnameStore["Service"] =>
  Hostnames.HostnameStore.of({
    find: (name) => read(store, (tables) => Option.fromNullishOr(tables(hostnameRows).get(name))),
    listByProject: (projectId) =>
      read(store, (tables) =>
        [...tables(hostnameRows).values()].filter((row) => row.projectId === projectId).sort(byListOrder)
      ),
    insert: (row) =>
      Effect.flatMap(
        write(store, (tables) => {
          if (tables(hostnameRows).has(row.name)) return false
          if (!tables(projectRows).has(row.projectId)) throw new Error(`no project ${row.projectId}`)
          tables(hostnameRows).set(row.name, row)
          return true
        }),
        (inserted) =>
          inserted ? Effect.void : Effect.fail(new Errors.HostnameTaken({ message: "this hostname is already in use" }))
      ),
    remove: (name) =>
      write(store, (tables) => {
        tables(hostnameRows).delete(name)
      }),
    markActive: (name, verifyToken, at) =>
      updateOwn(store, name, verifyToken, (row) => ({
        ...row,
        status: "active",
        lastError: null,
        verifiedAt: row.verifiedAt ?? at
      })),
    recordFailure: (name, verifyToken, error) =>
      updateOwn(store, name, verifyToken, (row) => (row.status === "pending_dns" ? { ...row, lastError: error } : row))
  })

export const layer: Layer.Layer<Hostnames.HostnameStore, never, MemoryState> = Layer.effect(
  Hostnames.HostnameStore,
  Effect.map(Effect.service(MemoryState), make)
)
