import { Database, type Kernel } from "@hostplane/core"
import { Effect, Layer, Option, Semaphore } from "effect"
import { MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"

export const databaseRows = memoryTable("database.databases", () => new Map<string, Database.DatabaseRow>())
export const tokenRows = memoryTable("database.tokens", () => new Map<string, Database.TokenRow>())
export const generationRows = memoryTable("database.generations", () => new Map<string, Database.GenerationRow>())

const tokenKey = (projectId: string, user: string) => `${projectId}\u0000${user}`
const generationKey = (projectId: string, epoch: number, seq: number) => `${projectId}\u0000${epoch}\u0000${seq}`

/** The per-project locks of `exclusive`, one set per memory state: every store made on it shares them. */
const locksOf = new WeakMap<MemoryStore, Map<string, Semaphore.Semaphore>>()
const lockOf = (store: MemoryStore, projectId: string) => {
  const locks = locksOf.get(store) ?? new Map<string, Semaphore.Semaphore>()
  locksOf.set(store, locks)
  const lock = locks.get(projectId) ?? Semaphore.makeUnsafe(1)
  locks.set(projectId, lock)
  return lock
}

/** `DatabaseStore` on the shared memory state. */
export const make = (store: MemoryStore): Database.DatabaseStore["Service"] =>
  Database.DatabaseStore.of({
    find: (projectId) => read(store, (tables) => Option.fromUndefinedOr(tables(databaseRows).get(projectId))),
    create: (projectId, sealedPassword, at, home) =>
      write(store, (tables) => {
        const existing = tables(databaseRows).get(projectId)
        if (existing !== undefined) return existing
        const row: Database.DatabaseRow = {
          projectId,
          sealedPassword,
          epoch: 1,
          operationId: null,
          createdAt: at,
          home,
          endpoint: null
        }
        tables(databaseRows).set(projectId, row)
        return row
      }),
    place: (projectId, home, endpoint) =>
      write(store, (tables) => {
        const row = tables(databaseRows).get(projectId)
        if (row === undefined || (row.home !== null && row.home !== home)) return false
        tables(databaseRows).set(projectId, { ...row, home, endpoint })
        return true
      }),
    move: (projectId, from, to, operationId) =>
      write(store, (tables) => {
        const row = tables(databaseRows).get(projectId)
        if (row === undefined || row.home !== from || row.operationId !== null) return false
        tables(databaseRows).set(projectId, { ...row, home: to, endpoint: null, operationId })
        return true
      }),
    remove: (projectId) =>
      write(store, (tables) => {
        tables(databaseRows).delete(projectId)
        for (const [key, token] of tables(tokenRows)) if (token.projectId === projectId) tables(tokenRows).delete(key)
      }),
    setEpoch: (projectId, epoch) =>
      write(store, (tables) => {
        const row = tables(databaseRows).get(projectId)
        if (row !== undefined) tables(databaseRows).set(projectId, { ...row, epoch })
      }),
    holdFor: (projectId, operationId) =>
      write(store, (tables) => {
        const row = tables(databaseRows).get(projectId)
        if (row === undefined || (operationId !== null && row.operationId !== null)) return false
        tables(databaseRows).set(projectId, { ...row, operationId })
        return true
      }),
    projects: read(store, (tables) => [...tables(databaseRows).keys()].sort() as Array<Kernel.ProjectId>),
    tokens: (projectId) =>
      read(store, (tables) =>
        [...tables(tokenRows).values()]
          .filter((token) => token.projectId === projectId)
          .sort((a, b) =>
            a.createdAt === b.createdAt ? (a.user < b.user ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1
          )
      ),
    addToken: (token) =>
      write(store, (tables) => void tables(tokenRows).set(tokenKey(token.projectId, token.user), token)),
    removeToken: (projectId, user) => write(store, (tables) => tables(tokenRows).delete(tokenKey(projectId, user))),
    generations: (projectId) =>
      read(store, (tables) =>
        [...tables(generationRows).values()]
          .filter((row) => row.projectId === projectId)
          .sort((a, b) => b.epoch - a.epoch || b.seq - a.seq)
      ),
    addGeneration: (g) =>
      write(store, (tables) => void tables(generationRows).set(generationKey(g.projectId, g.epoch, g.seq), g)),
    checked: (projectId, epoch, seq, at, ok) =>
      write(store, (tables) => {
        const key = generationKey(projectId, epoch, seq)
        const row = tables(generationRows).get(key)
        if (row !== undefined) {
          tables(generationRows).set(key, ok ? { ...row, lastCheckedAt: at } : { ...row, checkFailedAt: at })
        }
      }),
    removeGenerations: (projectId) =>
      write(store, (tables) => {
        for (const [key, row] of tables(generationRows))
          if (row.projectId === projectId) tables(generationRows).delete(key)
      }),
    exclusive: (projectId, effect) => lockOf(store, projectId).withPermit(effect)
  })

export const layer: Layer.Layer<Database.DatabaseStore, never, MemoryState> = Layer.effect(
  Database.DatabaseStore,
  Effect.map(MemoryState, make)
)
