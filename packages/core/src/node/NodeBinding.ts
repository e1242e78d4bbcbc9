import { Context, type Effect } from "effect"
import type { ProjectId } from "../kernel/Ids.ts"
import type { NodeProject } from "./Node.ts"

/** The add-on bindings a node applies for one project, by name (`null` while not granted). */
export type NodeBindingValues = NodeProject["bindings"]

/** One area's part of the node state: its binding of a project, null while the project does not hold it. */
export interface NodeBinding<K extends keyof NodeBindingValues = keyof NodeBindingValues> {
  readonly name: K
  readonly of: (projectId: ProjectId) => Effect.Effect<NodeBindingValues[K]>
}

/** An area's `node` field: the binding it adds to each project of the node state. */
export const nodeBinding = <K extends keyof NodeBindingValues>(
  name: K,
  of: (projectId: ProjectId) => Effect.Effect<NodeBindingValues[K]>
): NodeBinding => ({ name, of }) as NodeBinding

/** Every area's node binding, folded from the areas' `node` fields (`Area.services`). */
export class NodeBindings extends Context.Service<NodeBindings, ReadonlyArray<NodeBinding>>()(
  "@hostplane/core/node/NodeBindings"
) {}
