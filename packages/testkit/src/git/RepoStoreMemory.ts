import { Errors, Git, type Kernel } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import {
  MemoryState,
  memoryTable,
  type MemoryStore,
  nextSeq,
  read,
  type Sequenced,
  write
} from "../memory/MemoryState.ts"

export const repoRows = memoryTable("git.repos", () => new Map<string, Git.RepoRow>())
/** Every push's ref changes, in insertion order. */
export const refUpdateRows = memoryTable(
  "git.refUpdates",
  () => [] as Array<Sequenced<Git.RefUpdate & { readonly repoId: string }>>
)

const byName = (a: Git.RepoRow, b: Git.RepoRow) => {
  const [x, y] = [a.name.toLowerCase(), b.name.toLowerCase()]
  return x < y ? -1 : x > y ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0
}

const live = (repos: Map<string, Git.RepoRow>) => [...repos.values()].filter((row) => row.deletedAt === null)

const taken = (repos: Map<string, Git.RepoRow>, projectId: string, name: string, except?: string) =>
  live(repos).some(
    (row) => row.projectId === projectId && row.id !== except && row.name.toLowerCase() === name.toLowerCase()
  )

const repoExists = () => new Errors.RepoExists({ message: "a repository with this name already exists in the project" })

/** `RepoStore` on the shared memory state. */
export const make = (store: MemoryStore): Git.RepoStore["Service"] =>
  Git.RepoStore.of({
    list: (projectId) =>
      read(store, (tables) =>
        live(tables(repoRows))
          .filter((row) => row.projectId === projectId)
          .sort(byName)
      ),
    findByName: (projectId, name) =>
      read(store, (tables) =>
        Option.fromNullishOr(
          live(tables(repoRows)).find(
            (row) => row.projectId === projectId && row.name.toLowerCase() === name.toLowerCase()
          )
        )
      ),
    insert: (row) =>
      Effect.flatMap(
        write(store, (tables) => {
          if (taken(tables(repoRows), row.projectId, row.name)) return false
          tables(repoRows).set(row.id, row)
          return true
        }),
        (inserted) => (inserted ? Effect.void : Effect.fail(repoExists()))
      ),
    update: (id, change) =>
      Effect.flatMap(
        write(store, (tables) => {
          const row = tables(repoRows).get(id)
          if (row === undefined) return true
          if (taken(tables(repoRows), row.projectId, change.name, id)) return false
          tables(repoRows).set(id, { ...row, ...change })
          return true
        }),
        (updated) => (updated ? Effect.void : Effect.fail(repoExists()))
      ),
    softDelete: (id, at) =>
      write(store, (tables) => {
        const row = tables(repoRows).get(id)
        if (row !== undefined && row.deletedAt === null) tables(repoRows).set(id, { ...row, deletedAt: at })
      }),
    softDeleteProject: (projectId, at) =>
      write(store, (tables) =>
        live(tables(repoRows))
          .filter((row) => row.projectId === projectId)
          .map((row) => {
            tables(repoRows).set(row.id, { ...row, deletedAt: at })
            return row.id
          })
      ),
    countInOrg: (orgId) =>
      read(store, (tables) => {
        const rows = live(tables(repoRows))
          .filter((row) => row.orgId === orgId)
          .map((row) => row.name)
          .sort()
        return { count: rows.length, names: rows.slice(0, 5) }
      }),
    listDeletedBefore: (before, limit) =>
      read(store, (tables) =>
        [...tables(repoRows).values()]
          .filter((row) => row.deletedAt !== null && row.deletedAt <= before)
          .sort((a, b) => (a.deletedAt! < b.deletedAt! ? -1 : 1))
          .slice(0, limit)
      ),
    purge: (id) =>
      write(store, (tables) => {
        if (tables(repoRows).get(id)?.deletedAt == null) return
        tables(repoRows).delete(id)
        const kept = tables(refUpdateRows).filter((entry) => entry.row.repoId !== id)
        tables(refUpdateRows).splice(0, tables(refUpdateRows).length, ...kept)
      }),
    recordRefUpdates: (id, userId: Kernel.UserId, changes, at) =>
      write(store, (tables) => {
        for (const change of changes) {
          tables(refUpdateRows).push({ row: { repoId: id, ...change, userId, at }, seq: nextSeq(store) })
        }
      }),
    listRefUpdates: (id, limit) =>
      read(store, (tables) =>
        tables(refUpdateRows)
          .filter((entry) => entry.row.repoId === id)
          .sort((a, b) => b.seq - a.seq)
          .slice(0, limit)
          .map(({ row: { repoId: _repoId, ...update } }) => update)
      )
  })

export const layer: Layer.Layer<Git.RepoStore, never, MemoryState> = Layer.effect(
  Git.RepoStore,
  Effect.map(MemoryState, make)
)
