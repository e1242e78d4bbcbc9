import { Context, Effect, Option } from "effect"
import type { HostnameTaken, ProjectNameTaken } from "../errors/Errors.ts"
import type { ProjectRow } from "./Project.ts"
import type { DeploymentId, OrgId, ProjectId } from "../kernel/Ids.ts"

/** Projects. A name is unique in its org; a hostname (default or custom) is unique across all orgs. */
export class ProjectStore extends Context.Service<
  ProjectStore,
  {
    /** Inserts the project with its default hostname row (kind `default`, already `active`). */
    readonly insert: (project: ProjectRow) => Effect.Effect<void, ProjectNameTaken | HostnameTaken>
    readonly findByName: (orgId: OrgId, name: string) => Effect.Effect<Option.Option<ProjectRow>>
    readonly findById: (projectId: ProjectId) => Effect.Effect<Option.Option<ProjectRow>>
    /** The org's projects by name. */
    readonly list: (orgId: OrgId) => Effect.Effect<ReadonlyArray<ProjectRow>>
    /** Every project of the org, deleting ones included: they still hold resources. */
    readonly count: (orgId: OrgId) => Effect.Effect<number>
    readonly markDeleting: (projectId: ProjectId, at: string) => Effect.Effect<void>
    readonly setLiveDeployment: (projectId: ProjectId, deploymentId: DeploymentId) => Effect.Effect<void>
    /** Stops routing every hostname of the project (the first teardown step). */
    readonly removeHostnames: (projectId: ProjectId) => Effect.Effect<void>
    /** Removes the project row and everything that belongs to it; idempotent. */
    readonly remove: (projectId: ProjectId) => Effect.Effect<void>
  }
>()("@hostplane/core/projects/ProjectStore") {}
