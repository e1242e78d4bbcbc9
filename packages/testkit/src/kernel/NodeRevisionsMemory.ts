import { Kernel } from "@hostplane/core"
import { Effect, Layer, Queue } from "effect"
import { awaitTransactions, MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"

/** Each project's latest node revision; the counter is the highest of them. */
export const projectRevisions = memoryTable("kernel.projectRevisions", () => new Map<Kernel.ProjectId, number>())

const current = (stamps: ReadonlyMap<Kernel.ProjectId, number>) =>
  [...stamps.values()].reduce((highest, revision) => Math.max(highest, revision), 0)

/** Each store's `watch` subscribers: a raise wakes each once, however many come before it takes the wake-up. */
const watchers = new WeakMap<MemoryStore, Set<Queue.Queue<void>>>()
const watchersOf = (store: MemoryStore) => {
  const known = watchers.get(store)
  if (known !== undefined) return known
  const made = new Set<Queue.Queue<void>>()
  watchers.set(store, made)
  return made
}

/**
 * `NodeRevisions` on the shared memory state: each raise stamps its project with one more than the highest stamp
 * (a project keeps its stamp after it is gone). Transactions are serialised, so revisions commit in order.
 */
export const make = (store: MemoryStore): Kernel.NodeRevisions["Service"] =>
  Kernel.NodeRevisions.of({
    raise: (projectId) =>
      write(store, (tables) => {
        const revision = current(tables(projectRevisions)) + 1
        tables(projectRevisions).set(projectId, revision)
        for (const queue of watchersOf(store)) Queue.offerUnsafe(queue, undefined)
        return revision
      }),
    changedAfter: (after, limit) =>
      read(store, (tables) => {
        const stamps = [...tables(projectRevisions)]
          .filter(([, revision]) => revision > after)
          .sort(([, a], [, b]) => a - b)
          .slice(0, Math.max(1, limit) + 1)
          .map(([projectId, revision]) => ({ projectId, revision }))
        return Kernel.changesOf(current(tables(projectRevisions)), stamps, limit)
      }),
    // The wake-up comes at the raise, inside its transaction: `next` waits for that to end, so a read sees it.
    watch: Effect.gen(function* () {
      const queue = yield* Queue.sliding<void>(1)
      watchersOf(store).add(queue)
      yield* Effect.addFinalizer(() => Effect.sync(() => watchersOf(store).delete(queue)))
      return { next: Effect.andThen(Queue.take(queue), awaitTransactions(store)) }
    })
  })

export const layer: Layer.Layer<Kernel.NodeRevisions, never, MemoryState> = Layer.effect(
  Kernel.NodeRevisions,
  Effect.map(MemoryState, make)
)
