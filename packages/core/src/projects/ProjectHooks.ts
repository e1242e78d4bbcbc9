import { Context, Effect } from "effect"
import type { Job } from "../jobs/Job.ts"
import type { OperationPayload } from "../operations/Operation.ts"
import { type Addons, noAddons } from "./Project.ts"
import type { ProjectRow } from "./Project.ts"

/** The teardown order of a project delete (spec 4.3). */
export const deletePhases = ["routing", "draining", "data", "repositories", "metadata"] as const
export type DeletePhase = (typeof deletePhases)[number]

/** One area's part of a project delete; it must be idempotent, since a crash repeats the phase. */
export interface TeardownStep {
  readonly phase: DeletePhase
  readonly run: (project: ProjectRow, operation: Job<OperationPayload>) => Effect.Effect<void>
}

/** Areas holding project data (node data, storage, repositories, backups) register their teardown here. */
export const ProjectTeardown = Context.Reference<ReadonlyArray<TeardownStep>>(
  "@hostplane/core/projects/ProjectTeardown",
  {
    defaultValue: () => []
  }
)

/** Which add-ons a project has been granted; the add-on areas replace the default. */
export const ProjectAddons = Context.Reference<(projectId: string) => Effect.Effect<Addons>>(
  "@hostplane/core/projects/ProjectAddons",
  { defaultValue: () => () => Effect.succeed(noAddons) }
)
