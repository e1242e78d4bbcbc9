import { Kernel } from "@hostplane/core"
import { Effect, Layer } from "effect"
import { MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"

/** Each project's latest node revision; the counter is the highest of them. */
export const projectRevisions = memoryTable("kernel.projectRevisions", () => new Map<Kernel.ProjectId, number>())

const current = (stamps: ReadonlyMap<Kernel.ProjectId, number>) =>
  [...stamps.values()].reduce((highest, revision) => Math.max(highest, revision), 0)

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
      })
  })

export const layer: Layer.Layer<Kernel.NodeRevisions, never, MemoryState> = Layer.effect(
  Kernel.NodeRevisions,
  Effect.map(MemoryState, make)
)
