import { Jobs } from "@hostplane/core"
import { Effect, Layer, Option, Queue } from "effect"
import {
  awaitTransactions,
  MemoryState,
  memoryTable,
  type MemoryStore,
  read,
  type Tables,
  write
} from "../memory/MemoryState.ts"

export const jobRows = memoryTable("jobs.jobs", () => new Map<string, Jobs.JobRow>())

/** The runners registered on each store and not closed yet: the memory store's notion of a live process. */
const liveRunners = new WeakMap<MemoryStore, Set<string>>()
const runnersOf = (store: MemoryStore): Set<string> => {
  let runners = liveRunners.get(store)
  if (runners === undefined) liveRunners.set(store, (runners = new Set()))
  return runners
}

/** Whether `owner` is a runner identity registered on `store` and not closed (other stores' rows name them too). */
export const isLiveOwner = (store: MemoryStore, owner: string): boolean => runnersOf(store).has(owner)

/** Each store's `watch` subscribers, each told the kinds of the work come free since it last took. */
const watchers = new WeakMap<MemoryStore, Set<Queue.Queue<string>>>()
const watchersOf = (store: MemoryStore): Set<Queue.Queue<string>> => {
  let queues = watchers.get(store)
  if (queues === undefined) watchers.set(store, (queues = new Set()))
  return queues
}

const unfinished = (row: Jobs.JobRow) => row.terminalCode === null

/** Applies `f` to a job `owner` still holds; false when it holds it no longer. */
const updateHeld = (
  tables: Tables,
  id: string,
  owner: string,
  f: (row: Jobs.JobRow) => Jobs.JobRow | undefined
): boolean => {
  const row = tables(jobRows).get(id)
  if (row === undefined || !unfinished(row) || row.leaseOwner !== owner) return false
  const next = f(row)
  if (next === undefined) return false
  tables(jobRows).set(id, next)
  return true
}

const byDue = (a: Jobs.JobRow, b: Jobs.JobRow) =>
  a.runAt < b.runAt ? -1 : a.runAt > b.runAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0

/** `JobStore` on the shared memory state; a runner is live from `register` until its scope closes. */
export const make = (store: MemoryStore): Jobs.JobStore["Service"] => {
  const runners = runnersOf(store)
  // Called inside the write that frees the work: `next` waits for that transaction to end, so a claim then sees it.
  const tell = (kind: string) => {
    for (const queue of watchersOf(store)) Queue.offerUnsafe(queue, kind)
  }
  return Jobs.JobStore.of({
    insert: (job) =>
      write(store, (tables) => {
        const taken =
          tables(jobRows).has(job.id) ||
          (job.key !== null &&
            [...tables(jobRows).values()].some(
              (row) => row.kind === job.kind && row.key === job.key && unfinished(row)
            ))
        if (taken) return false
        tables(jobRows).set(job.id, {
          ...job,
          payload: structuredClone(job.payload),
          terminalCode: null,
          attempts: 0,
          leaseOwner: null,
          leaseUntil: null,
          abortRequested: false,
          lastError: null,
          updatedAt: job.createdAt
        })
        tell(job.kind)
        return true
      }),
    get: (id) => read(store, (tables) => Option.fromNullishOr(tables(jobRows).get(id))),
    findUnfinished: (kind, key) =>
      read(store, (tables) =>
        Option.fromNullishOr(
          [...tables(jobRows).values()].find((row) => row.kind === kind && row.key === key && unfinished(row))
        )
      ),
    unfinishedPinned: (kind, limit) =>
      read(store, (tables) =>
        [...tables(jobRows).values()]
          .filter((row) => row.kind.startsWith(`${kind}@`) && unfinished(row))
          .sort((a, b) =>
            a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0
          )
          .slice(0, Math.max(limit, 0))
      ),
    register: Effect.acquireRelease(
      Effect.sync(() => {
        const owner = `runner_${crypto.randomUUID()}`
        runners.add(owner)
        return owner
      }),
      (owner) =>
        Effect.andThen(
          Effect.sync(() => runners.delete(owner)),
          write(store, (tables) => {
            for (const row of tables(jobRows).values()) {
              if (row.leaseOwner === owner && unfinished(row)) {
                tables(jobRows).set(row.id, { ...row, leaseOwner: null, leaseUntil: null })
                tell(row.kind)
              }
            }
          })
        )
    ).pipe(Effect.map((owner) => ({ owner, alive: Effect.sync(() => runners.has(owner)) }))),
    watch: Effect.gen(function* () {
      const queue = yield* Queue.unbounded<string>()
      watchersOf(store).add(queue)
      yield* Effect.addFinalizer(() => Effect.sync(() => watchersOf(store).delete(queue)))
      return {
        next: Effect.flatMap(Queue.takeAll(queue), (kinds) => Effect.as(awaitTransactions(store), [...new Set(kinds)]))
      }
    }),
    nextDue: (kinds) =>
      read(store, (tables) => {
        let due: string | undefined
        for (const row of tables(jobRows).values()) {
          if (!unfinished(row) || !kinds.includes(row.kind)) continue
          const free = row.leaseUntil !== null && row.leaseUntil > row.runAt ? row.leaseUntil : row.runAt
          if (due === undefined || free < due) due = free
        }
        return Option.fromNullishOr(due)
      }),
    claim: (owner, kinds, now, leaseUntil, limit) =>
      write(store, (tables) =>
        [...tables(jobRows).values()]
          .filter(
            (row) =>
              unfinished(row) &&
              kinds.includes(row.kind) &&
              row.runAt <= now &&
              (row.leaseOwner === null ||
                (row.leaseUntil !== null && row.leaseUntil <= now) ||
                !runners.has(row.leaseOwner))
          )
          .sort(byDue)
          .slice(0, Math.max(limit, 0))
          .map((row) => {
            const claimed = { ...row, leaseOwner: owner, leaseUntil, attempts: row.attempts + 1 }
            tables(jobRows).set(row.id, claimed)
            return claimed
          })
      ),
    claimJob: (owner, id, now, leaseUntil) =>
      write(store, (tables) => {
        const row = tables(jobRows).get(id)
        const free =
          row !== undefined &&
          unfinished(row) &&
          (row.leaseOwner === null ||
            (row.leaseUntil !== null && row.leaseUntil <= now) ||
            !runners.has(row.leaseOwner))
        if (!free) return Option.none()
        const claimed = { ...row, leaseOwner: owner, leaseUntil, attempts: row.attempts + 1 }
        tables(jobRows).set(id, claimed)
        return Option.some(claimed)
      }),
    renew: (owner, ids, leaseUntil) =>
      write(store, (tables) => ids.filter((id) => updateHeld(tables, id, owner, (row) => ({ ...row, leaseUntil })))),
    advance: (id, owner, phase, at) =>
      write(store, (tables) =>
        updateHeld(tables, id, owner, (row) => (row.abortRequested ? undefined : { ...row, phase, updatedAt: at }))
      ),
    finish: (id, owner, code, error, at) =>
      write(store, (tables) =>
        updateHeld(tables, id, owner, (row) => ({
          ...row,
          terminalCode: code,
          lastError: error ?? row.lastError,
          leaseOwner: null,
          leaseUntil: null,
          updatedAt: at
        }))
      ),
    reschedule: (id, owner, next, at) =>
      write(store, (tables) =>
        updateHeld(tables, id, owner, (row) => ({
          ...row,
          phase: next.phase,
          runAt: next.runAt,
          lastError: next.error,
          attempts: next.resetAttempts ? 0 : row.attempts,
          leaseOwner: null,
          leaseUntil: null,
          updatedAt: at
        }))
      ),
    requestAbort: (id, phases, at) =>
      write(store, (tables) => {
        const row = tables(jobRows).get(id)
        if (row === undefined || !unfinished(row) || !phases.includes(row.phase)) return false
        tables(jobRows).set(id, {
          ...row,
          abortRequested: true,
          runAt: row.runAt < at ? row.runAt : at,
          updatedAt: at
        })
        if (at < row.runAt) tell(row.kind)
        return true
      }),
    purgeFinished: (kind, before) =>
      write(store, (tables) => {
        let removed = 0
        for (const row of [...tables(jobRows).values()]) {
          const ofKind = row.kind === kind || row.kind.startsWith(`${kind}@`)
          if (!ofKind || unfinished(row) || !(row.updatedAt < before)) continue
          tables(jobRows).delete(row.id)
          removed++
        }
        return removed
      })
  })
}

export const layer: Layer.Layer<Jobs.JobStore, never, MemoryState> = Layer.effect(
  Jobs.JobStore,
  Effect.map(Effect.service(MemoryState), make)
)
