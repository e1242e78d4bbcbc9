import type {
  Access,
  Deployments,
  Edge,
  Idempotency,
  Identity,
  Jobs,
  Kernel,
  Mail,
  Orgs,
  Projects,
  Secrets
} from "@hostplane/core"
import type { HostnameRow } from "@hostplane/core/hostnames/Hostname"
import { Context, Effect, Exit, Layer, Semaphore } from "effect"

export interface UserRecord {
  readonly user: Identity.User
  readonly createdAt: string
}

export interface MemberRecord {
  readonly orgId: string
  readonly userId: string
  readonly role: Kernel.Role
  readonly joinedAt: string
  readonly seq: number
}

export interface Sequenced<Row> {
  readonly row: Row
  readonly seq: number
}

/** Every table of the in-memory store. Rows are immutable: writes replace them, so a snapshot copies only the maps. */
export interface Tables {
  readonly users: Map<string, UserRecord>
  readonly sessions: Map<string, Identity.SessionRow>
  readonly oauthStates: Map<string, Identity.OAuthStateRow>
  readonly orgs: Map<string, Orgs.OrgRow>
  /** Keyed by `memberKey(orgId, userId)`. */
  readonly members: Map<string, MemberRecord>
  readonly invites: Map<string, Sequenced<Omit<Orgs.InviteRow, "sentAt">>>
  readonly notifications: Map<string, Sequenced<Orgs.NotificationRow>>
  readonly outbox: Map<string, Sequenced<Mail.OutboxRow>>
  readonly audit: Array<Kernel.AuditEvent>
  readonly projects: Map<string, Projects.ProjectRow>
  /** Keyed by hostname. */
  readonly hostnames: Map<string, HostnameRow>
  readonly jobs: Map<string, Jobs.JobRow>
  readonly deployments: Map<string, Deployments.DeploymentRow>
  /** Keyed by token hash. */
  readonly edgeSessions: Map<string, Edge.EdgeSessionRow>
  /** Keyed by `secretKey(projectId, name)`. */
  readonly secrets: Map<string, Secrets.SecretRow>
  /** Keyed by project id. */
  readonly accessPolicies: Map<string, Access.AccessPolicyRow>
  /** Keyed by code hash. */
  readonly accessCodes: Map<string, Access.AccessCodeRow>
  /** Keyed by user id and key. */
  readonly idempotencyKeys: Map<string, Idempotency.IdempotencyRecord>
}

const emptyTables = (): Tables => ({
  users: new Map(),
  sessions: new Map(),
  oauthStates: new Map(),
  orgs: new Map(),
  members: new Map(),
  invites: new Map(),
  notifications: new Map(),
  outbox: new Map(),
  audit: [],
  projects: new Map(),
  hostnames: new Map(),
  jobs: new Map(),
  deployments: new Map(),
  edgeSessions: new Map(),
  secrets: new Map(),
  accessPolicies: new Map(),
  accessCodes: new Map(),
  idempotencyKeys: new Map()
})

/** Copies every table (maps and arrays are copied, rows are shared since they are immutable). */
const copyTables = (tables: Tables): Tables =>
  Object.fromEntries(
    Object.entries(tables).map(([name, table]) => [
      name,
      Array.isArray(table) ? [...table] : new Map(table as Map<unknown, unknown>)
    ])
  ) as unknown as Tables

export const secretKey = (projectId: string, name: string): string => `${projectId}\u0000${name}`

export const memberKey = (orgId: string, userId: string): string => `${orgId}\u0000${userId}`

/**
 * The one state object behind every memory adapter. Transactions are serialised by one permit; `committed` is the
 * state as it was when the running transaction began, which is what readers outside that transaction see.
 */
export interface MemoryStore {
  tables: Tables
  committed: Tables | undefined
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
    MemoryState.of({ tables: emptyTables(), committed: undefined, permit: Semaphore.makeUnsafe(1), seq: 0 })
  )
}

export const nextSeq = (store: MemoryStore): number => ++store.seq

/** Reads the tables this fiber may see: its own writes inside a transaction, the committed state outside one. */
export const read = <A>(store: MemoryStore, f: (tables: Tables) => A): Effect.Effect<A> =>
  Effect.map(InTransaction, (held) => f(holds(held, store) ? store.tables : (store.committed ?? store.tables)))

/**
 * Applies a write. Inside a transaction it joins it; outside one it is its own single-statement transaction and
 * waits for a running transaction to end, like a row lock. `f` must check before it mutates: a throw is a defect.
 */
export const write = <A>(store: MemoryStore, f: (tables: Tables) => A): Effect.Effect<A> =>
  Effect.flatMap(InTransaction, (held) => {
    const apply = Effect.sync(() => f(store.tables))
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
