import { Schema, Struct } from "effect"
import { Manifest } from "./Manifest.ts"
import { DeploymentId, ProjectId, UserId } from "../kernel/Ids.ts"

/** Display-only facts from the `X-Service-Git-*` headers of an upload. */
export const GitInfo = Schema.Struct({
  commit: Schema.NullOr(Schema.String),
  message: Schema.NullOr(Schema.String),
  branch: Schema.NullOr(Schema.String),
  dirty: Schema.NullOr(Schema.Boolean)
})
export type GitInfo = typeof GitInfo.Type

/** An immutable, versioned record of an uploaded bundle (decisions.md part 4). */
export const Deployment = Schema.Struct({
  id: DeploymentId,
  version: Schema.Int,
  digest: Schema.String,
  bytes: Schema.Int,
  files: Schema.Int,
  createdAt: Schema.String,
  /** The user id of the uploader. */
  uploadedBy: UserId,
  live: Schema.Boolean,
  manifest: Manifest,
  git: Schema.NullOr(GitInfo)
})
export type Deployment = typeof Deployment.Type

/** The stored deployment; `live` is derived from the project's live pointer. */
export const DeploymentRow = Schema.Struct({ ...Struct.omit(Deployment.fields, ["live"]), projectId: ProjectId })
export type DeploymentRow = typeof DeploymentRow.Type

export const toDeployment = (row: DeploymentRow, liveDeploymentId: string | null): Deployment => ({
  id: row.id,
  version: row.version,
  digest: row.digest,
  bytes: row.bytes,
  files: row.files,
  createdAt: row.createdAt,
  uploadedBy: row.uploadedBy,
  live: row.id === liveDeploymentId,
  manifest: row.manifest,
  git: row.git
})

export const RollbackInput = Schema.Struct({ deploymentId: DeploymentId })

/** A page of a project's deployments, newest first; `nextCursor` fetches the older ones, null on the last page. */
export const DeploymentList = Schema.Struct({
  items: Schema.Array(Deployment),
  nextCursor: Schema.NullOr(Schema.String)
})
export type DeploymentList = typeof DeploymentList.Type
