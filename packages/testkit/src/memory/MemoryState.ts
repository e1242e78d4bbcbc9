import { Context, Effect, Exit, Layer, Semaphore } from "effect"

/**
 * Memory tables are declared by the area that owns them, in its own testkit folder:
 *
 *   export const repos = memoryTable("git.repos", () => new Map<RepoId, RepoRow>())
 *   read(store, (tables) => tables(repos).get(id))
 *   write(store, (tables) => tables(repos).set(id, row))
 *
 * A table is a `Map` or an array of immutable rows (writes replace rows, so a snapshot copies only the containers).
 * It is created empty on first use; transactions snapshot and roll back every table the store holds, so a table
 * first used inside a transaction that fails is gone again afterwards. Names are `<area>.<table>` and unique.
 */
export interface MemoryTable<T extends TableValue> {
  readonly name: string
  readonly empty: () => T
}

type TableValue = Map<any, any> | Array<any>

export const memoryTable = <T extends TableValue>(name: string, empty: () => T): MemoryTable<T> => ({ name, empty })

/** The tables one `read` or `write` sees: `tables(repos)` is that store's table `repos`. */
export type Tables = <T extends TableValue>(table: MemoryTable<T>) => T

type TableMap = Map<string, TableValue>

const tablesOf =
  (map: TableMap): Tables =>
  <T extends TableValue>(table: MemoryTable<T>): T => {
    let value = map.get(table.name)
    if (value === undefined) map.set(table.name, (value = table.empty()))
    return value as T
  }

/** Copies every table (maps and arrays are copied, rows are shared since they are immutable). */
const copyTables = (map: TableMap): TableMap =>
  new Map([...map].map(([name, table]) => [name, Array.isArray(table) ? [...table] : new Map(table)]))

export interface Sequenced<Row> {
  readonly row: Row
  readonly seq: number
}

/**
 * The one state object behind every memory adapter. Transactions are serialised by one permit; `committed` is the
 * state as it was when the running transaction began, which is what readers outside that transaction see.
 */
export interface MemoryStore {
  tables: TableMap
  committed: TableMap | undefined
  readonly permit: Semaphore.Semaphore
  /** Monotonic insertion counter, the tie-breaker of "newest first". */
  seq: number
}

/** A transaction a fiber runs inside; `open` turns false when it ends, so a fiber that outlives it stops joining it. */
interface Hold {
  readonly store: MemoryStore
  open: boolean
}

/** The transactions the current fiber (or the fiber that forked it) runs inside, one per memory store. */
const InTransaction = Context.Reference<ReadonlyArray<Hold>>("@hostplane/testkit/memory/InTransaction", {
  defaultValue: () => []
})

const holds = (held: ReadonlyArray<Hold>, store: MemoryStore): boolean =>
  held.some((hold) => hold.store === store && hold.open)

/** Shared state of one `layerMemory`: every memory port built from the same instance sees the same tables. */
export class MemoryState extends Context.Service<MemoryState, MemoryStore>()("@hostplane/testkit/memory/MemoryState") {
  /** A fresh, empty store on every build. */
  static readonly layer = Layer.sync(MemoryState, () =>
    MemoryState.of({ tables: new Map(), committed: undefined, permit: Semaphore.makeUnsafe(1), seq: 0 })
  )
}

export const nextSeq = (store: MemoryStore): number => ++store.seq

/** Reads the tables this fiber may see: its own writes inside a transaction, the committed state outside one. */
export const read = <A>(store: MemoryStore, f: (tables: Tables) => A): Effect.Effect<A> =>
  Effect.map(InTransaction, (held) =>
    f(tablesOf(holds(held, store) ? store.tables : (store.committed ?? store.tables)))
  )

/**
 * Applies a write. Inside a transaction it joins it; outside one it is its own single-statement transaction and
 * waits for a running transaction to end, like a row lock. `f` must check before it mutates: a throw is a defect.
 */
export const write = <A>(store: MemoryStore, f: (tables: Tables) => A): Effect.Effect<A> =>
  Effect.flatMap(InTransaction, (held) => {
    const apply = Effect.sync(() => f(tablesOf(store.tables)))
    return holds(held, store) ? apply : store.permit.withPermit(apply)
  })

/**
 * Runs `effect` with `store.tables` restored to the state before it whenever it fails, dies or is interrupted. With a
 * `hold` it is the outermost transaction: its snapshot is what readers outside it see until it ends.
 */
const rollbackOnFailure = <A, E, R>(
  store: MemoryStore,
  effect: Effect.Effect<A, E, R>,
  hold: Hold | undefined
): Effect.Effect<A, E, R> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function* () {
      const snapshot = copyTables(store.tables)
      if (hold !== undefined) store.committed = snapshot
      const exit = yield* Effect.exit(restore(effect))
      if (Exit.isFailure(exit)) store.tables = snapshot
      if (hold !== undefined) {
        hold.open = false
        store.committed = undefined
      }
      return yield* exit
    })
  )

/**
 * One transaction on `store`: serialised with every other one, and all or nothing. A nested call inside a running
 * transaction joins it as a savepoint: its failure undoes only its own writes, and the outer transaction decides.
 */
export const transaction = <A, E, R>(store: MemoryStore, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(InTransaction, (held) => {
    if (holds(held, store)) return rollbackOnFailure(store, effect, undefined)
    const hold: Hold = { store, open: true }
    const inside = Effect.provideService(effect, InTransaction, [...held.filter((h) => h.open), hold])
    return store.permit.withPermit(rollbackOnFailure(store, inside, hold))
  })

/** Outside a transaction: waits until the running transaction ends. Inside one: nothing, it already holds the store. */
export const awaitTransactions = (store: MemoryStore): Effect.Effect<void> => write(store, () => undefined)
