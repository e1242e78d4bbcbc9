import { Context, Effect } from "effect"
import type { ProjectId } from "./Ids.ts"

/**
 * This process's own word that a project's node-visible state (what raises its node revision) changed and the change
 * has committed: caches of that state (the edge's) drop it at once, so the next request after a 201 sees the change.
 * Other replicas learn of it from the node revision instead; this only removes the delay for the process that wrote.
 */
export interface NodeChangesService {
  /** Tells every listener; call after the change committed. */
  readonly changed: (projectId: ProjectId) => Effect.Effect<void>
  /** Adds a listener (called synchronously); answers its removal. */
  readonly listen: (listener: (projectId: ProjectId) => void) => () => void
}

/** A bus of its own: a host (or a test) that must keep its servers' changes apart provides one per server. */
export const makeNodeChanges = (): NodeChangesService => {
  const listeners = new Set<(projectId: ProjectId) => void>()
  return {
    changed: (projectId) =>
      Effect.sync(() => {
        for (const listener of listeners) listener(projectId)
      }),
    listen: (listener) => {
      listeners.add(listener)
      return () => listeners.delete(listener)
    }
  }
}

// One bus per process even when core is loaded twice (its sources and its build, as tests do): a writer in one copy
// must reach the edge of the other. Project ids are unique, so several servers in one process only ever drop entries
// of their own projects.
const shared = Symbol.for("@hostplane/core/kernel/NodeChanges")

/** The process's bus; a host may provide its own (a test isolating servers). */
export const NodeChanges = Context.Reference<NodeChangesService>("@hostplane/core/kernel/NodeChanges", {
  defaultValue: () => ((globalThis as { [shared]?: NodeChangesService })[shared] ??= makeNodeChanges())
})
