import { Context, Effect, Option } from "effect"
import type { DeploymentRow } from "./Deployment.ts"
import type { DeploymentId, ProjectId } from "../kernel/Ids.ts"

/** Deployment records; `version` counts 1, 2, 3... per project and never repeats. */
export class DeploymentStore extends Context.Service<
  DeploymentStore,
  {
    /** The version the next upload of the project gets; call under the org lock. */
    readonly nextVersion: (projectId: ProjectId) => Effect.Effect<number>
    readonly insert: (row: DeploymentRow) => Effect.Effect<void>
    readonly get: (projectId: ProjectId, deploymentId: DeploymentId) => Effect.Effect<Option.Option<DeploymentRow>>
    /** Newest first; with `beforeVersion`, only the versions below it (the next page). */
    readonly list: (
      projectId: ProjectId,
      limit: number,
      beforeVersion?: number
    ) => Effect.Effect<ReadonlyArray<DeploymentRow>>
  }
>()("@hostplane/core/deployments/DeploymentStore") {}
