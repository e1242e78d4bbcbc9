import { Schema } from "effect"
import { Deployment } from "../deployments/Deployment.ts"
import { Notification, Slug } from "../orgs/Org.ts"
import { DeploymentId, OrgId, ProjectId } from "../kernel/Ids.ts"

/** The stored project; `orgId` never leaves the service. */
export const ProjectRow = Schema.Struct({
  id: ProjectId,
  orgId: OrgId,
  name: Schema.String,
  /** The issued default hostname, `<name>.<app domain>`. */
  hostname: Schema.String,
  createdAt: Schema.String,
  /** The deployment the edge serves, null before the first upload. */
  liveDeploymentId: Schema.NullOr(DeploymentId),
  /** Set once a delete has started; the project stays readable until its metadata is removed. */
  deletingSince: Schema.NullOr(Schema.String)
})
export type ProjectRow = typeof ProjectRow.Type

export const Project = Schema.Struct({
  id: ProjectId,
  name: Schema.String,
  hostname: Schema.String,
  createdAt: Schema.String
})
export type Project = typeof Project.Type

export const toProject = (row: ProjectRow): Project => ({
  id: row.id,
  name: row.name,
  hostname: row.hostname,
  createdAt: row.createdAt
})

export const Addons = Schema.Struct({
  database: Schema.Boolean,
  storage: Schema.Boolean,
  email: Schema.Boolean,
  auth: Schema.Boolean,
  ai: Schema.Boolean
})
export type Addons = typeof Addons.Type

export const noAddons: Addons = { database: false, storage: false, email: false, auth: false, ai: false }

export const CreateProjectInput = Schema.Struct({ name: Slug })
export const DeleteProjectInput = Schema.Struct({ confirm: Schema.String })

export const ProjectDetail = Schema.Struct({
  ...Project.fields,
  liveDeployment: Schema.NullOr(Deployment),
  addons: Addons
})
export type ProjectDetail = typeof ProjectDetail.Type

/** Whether an add-on the live bundle declares has been granted. */
export const ResourceState = Schema.Struct({ declared: Schema.Boolean, provisioned: Schema.Boolean })

/** Spec 4.3 overview: what serves, who uploaded it, recent history and notices; no usage figures. */
export const ProjectOverview = Schema.Struct({
  project: Project,
  serving: Schema.NullOr(
    Schema.Struct({
      deployment: Deployment,
      uploader: Schema.NullOr(
        Schema.Struct({
          userId: Schema.String,
          name: Schema.NullOr(Schema.String),
          email: Schema.NullOr(Schema.String)
        })
      )
    })
  ),
  recentDeployments: Schema.Array(Deployment),
  /** The newest database generation (by epoch, then seq); null when the project never had one. */
  lastBackup: Schema.NullOr(Schema.Struct({ epoch: Schema.Number, seq: Schema.Number, createdAt: Schema.String })),
  resources: Schema.Struct({
    database: ResourceState,
    storage: ResourceState,
    email: ResourceState,
    auth: ResourceState,
    ai: ResourceState
  }),
  notifications: Schema.Array(Notification)
})
export type ProjectOverview = typeof ProjectOverview.Type
