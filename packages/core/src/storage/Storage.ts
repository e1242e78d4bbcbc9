import { Schema } from "effect"
import type { ProjectId } from "../kernel/Ids.ts"

/** StorageStatus of decisions.md part 4; `usedBytes` is the node's last report, so it lags. */
export const StorageStatus = Schema.Struct({
  enabled: Schema.Boolean,
  prefix: Schema.String,
  quotaBytes: Schema.Number,
  usedBytes: Schema.Number
}).annotate({ identifier: "StorageStatus" })
export type StorageStatus = typeof StorageStatus.Type

/** The node state's `storage` binding (decisions.md part 6). */
export const StorageBinding = Schema.Struct({ prefix: Schema.String, quotaBytes: Schema.Number })
export type StorageBinding = typeof StorageBinding.Type

/**
 * A project's storage row: made by the first grant and kept after a revoke (the objects stay under the prefix, and a
 * later grant finds them again); it goes with the project.
 */
export interface StorageRow {
  readonly projectId: ProjectId
  readonly prefix: string
  readonly granted: boolean
  readonly usedBytes: number
}

/** One line of a node's usage report: the bytes the project's prefix holds now. */
export interface UsageLine {
  readonly projectId: ProjectId
  readonly storageBytes: number
}
