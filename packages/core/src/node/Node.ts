import { Schema } from "effect"
import { areas } from "../areas.ts"
import type { AreaNodeBinding } from "./NodeBinding.ts"

type BindingOf<A> = A extends { readonly node?: infer N }
  ? N extends AreaNodeBinding<any, any, any>
    ? N
    : never
  : never
type Declared = BindingOf<(typeof areas)[number]>

/** The node state's `bindings`: each area's node binding under its name, null while the project does not hold it. */
export type NodeBindingFields = { readonly [B in Declared as B["name"]]: Schema.NullOr<B["schema"]> }

const bindingFields = Object.fromEntries(
  areas.flatMap((area) =>
    "node" in area && area.node !== undefined ? [[area.node.name, Schema.NullOr(area.node.schema)]] : []
  )
) as unknown as NodeBindingFields

/** One project as a node applies it (decisions.md part 6); a removed project comes with `removed: true`. */
export const NodeProject = Schema.Struct({
  projectId: Schema.String,
  removed: Schema.Boolean,
  org: Schema.NullOr(Schema.String),
  name: Schema.NullOr(Schema.String),
  hostnames: Schema.Array(Schema.String),
  deployment: Schema.NullOr(Schema.Struct({ id: Schema.String, digest: Schema.String })),
  access: Schema.NullOr(Schema.Struct({ mode: Schema.String })),
  secrets: Schema.Array(Schema.Struct({ name: Schema.String, version: Schema.Number })),
  bindings: Schema.Struct(bindingFields)
})
export type NodeProject = typeof NodeProject.Type

export const NodeState = Schema.Struct({ revision: Schema.Number, projects: Schema.Array(NodeProject) })
export type NodeState = typeof NodeState.Type

export const NodeStateQuery = Schema.Struct({
  after: Schema.optionalKey(Schema.NumberFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0)))
})

export const OpenedSecrets = Schema.Struct({
  items: Schema.Array(Schema.Struct({ name: Schema.String, version: Schema.Number, value: Schema.String }))
})
export type OpenedSecrets = typeof OpenedSecrets.Type

/** A node's usage report (decisions.md part 6): the bytes each project's storage prefix holds now. */
export const UsageReport = Schema.Struct({
  items: Schema.Array(
    Schema.Struct({
      projectId: Schema.String,
      storageBytes: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
    })
  ).check(Schema.isMaxLength(10_000))
})
export type UsageReport = typeof UsageReport.Type

/** What a report changed: the projects whose `usedBytes` it set, and the ids it ignored (no storage row). */
export const UsageRecorded = Schema.Struct({ recorded: Schema.Number, ignored: Schema.Array(Schema.String) })
export type UsageRecorded = typeof UsageRecorded.Type
