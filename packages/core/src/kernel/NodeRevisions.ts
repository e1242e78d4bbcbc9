import { Context, type Effect, Schema, type Scope } from "effect"
import type { ProjectId } from "./Ids.ts"

/** A project stamped with the revision of its latest change a node must apply. */
export interface ProjectRevision {
  readonly projectId: ProjectId
  readonly revision: number
}

/** What changed after a revision: `revision` is where the next read starts (`after` is exclusive). */
export interface RevisionChanges {
  readonly revision: number
  /** Oldest first; a project appears once, with its latest revision (also after the project is gone). */
  readonly projects: ReadonlyArray<ProjectRevision>
}

/** The feed of raises was lost (a dropped connection): the reader polls until it subscribes again. */
export class RevisionFeedLost extends Schema.TaggedError<RevisionFeedLost>()("RevisionFeedLost", {
  message: Schema.String
}) {}

/** A subscription to raises by any process; `next` waits for at least one committed since the last `next`. */
export interface RevisionFeed {
  readonly next: Effect.Effect<void, RevisionFeedLost>
}

/**
 * The node revision (decisions.md part 6): one monotonic counter, raised by every change a node must apply (deploy,
 * rollback, secret, hostname, access, add-on grant and revoke, and an org's plan change for each of its projects),
 * each raise stamping its project. `raise` joins the writing transaction and holds the counter until it commits, so
 * revisions commit in order: a reader that sees revision N sees every change up to N. Writes raise it through
 * `Mutation.project(..., { node: true })`; the billing webhook raises it itself.
 */
export class NodeRevisions extends Context.Service<
  NodeRevisions,
  {
    /** Raises the counter and stamps the project with the new value, which it answers. Call inside a transaction. */
    readonly raise: (projectId: ProjectId) => Effect.Effect<number>
    /**
     * The projects stamped after `after`, oldest first, at most `limit`. `revision` is the latest committed one, or
     * the last listed project's when more remain, so reading again from it misses nothing.
     */
    readonly changedAfter: (after: number, limit: number) => Effect.Effect<RevisionChanges>
    /**
     * Subscribes to raises by every process on the store; a raise that commits after this answers completes `next`
     * once a read can see it.
     */
    readonly watch: Effect.Effect<RevisionFeed, RevisionFeedLost, Scope.Scope>
  }
>()("@hostplane/core/kernel/NodeRevisions") {}

/**
 * The answer of `changedAfter` from the current revision and the stamps after `after`, oldest first, fetched up to
 * one beyond `limit` (at least 1) to tell whether more remain.
 */
export const changesOf = (current: number, stamps: ReadonlyArray<ProjectRevision>, limit: number): RevisionChanges => {
  const projects = stamps.slice(0, Math.max(1, limit))
  const last = projects.at(-1)
  return { revision: stamps.length > projects.length && last !== undefined ? last.revision : current, projects }
}
