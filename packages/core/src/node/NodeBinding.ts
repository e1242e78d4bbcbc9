import { Context, type Effect, type Schema } from "effect"
import type { ProjectId } from "../kernel/Ids.ts"

/** One project's line of a node's usage report (decisions.md part 6, `POST /v1/node/usage`). */
export interface UsageLine {
  readonly projectId: ProjectId
  readonly storageBytes: number
}

/** Records the lines of a node's usage report that concern the binding; answers the projects it recorded. */
export type UsageRecorder = (lines: ReadonlyArray<UsageLine>) => Effect.Effect<ReadonlyArray<ProjectId>>

/**
 * An area's `node` field: its binding in each project of the node state (decisions.md part 6), what a node applies
 * for a worker's `env`. `name` is its key in `bindings`, `schema` its value there (the node state's schema folds every
 * area's), and `of` reads a project's value, null while the project does not hold it; `of` is built after every
 * area, so it may use any area's services.
 */
export interface AreaNodeBinding<K extends string, S extends Schema.Top, R> {
  readonly name: K
  readonly schema: S
  readonly of: Effect.Effect<(projectId: ProjectId) => Effect.Effect<S["Type"] | null>, never, R>
  /** What the binding makes of the nodes' usage reports (storage keeps `usedBytes`); absent, it reads none. */
  readonly usage?: Effect.Effect<UsageRecorder, never, R> | undefined
}

/** Any area's node binding. */
export type AnyAreaNodeBinding = AreaNodeBinding<string, Schema.Top, any>

/** Declares an area's node binding, keeping its name and schema for the node state's type. */
export const nodeBinding = <const K extends string, S extends Schema.Top, R>(
  name: K,
  schema: S,
  of: Effect.Effect<(projectId: ProjectId) => Effect.Effect<S["Type"] | null>, never, R>,
  options: { readonly usage?: Effect.Effect<UsageRecorder, never, R> } = {}
): AreaNodeBinding<K, S, R> => ({ name, schema, of, usage: options.usage })

/** One area's binding as the node state reads it. */
export interface NodeBinding {
  readonly name: string
  readonly of: (projectId: ProjectId) => Effect.Effect<unknown>
  readonly usage?: UsageRecorder | undefined
}

/** Every area's node binding, folded from the areas' `node` fields (`Area.services`). */
export class NodeBindings extends Context.Service<NodeBindings, ReadonlyArray<NodeBinding>>()(
  "@hostplane/core/node/NodeBindings"
) {}
