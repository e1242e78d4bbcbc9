import { Context, type Effect } from "effect"
import type { Job } from "../jobs/Job.ts"
import type { OperationPayload } from "../operations/Operation.ts"
import type { ProjectRow } from "./Project.ts"

/** The teardown order of a project delete (spec 4.3). */
export const deletePhases = ["routing", "draining", "data", "repositories", "metadata"] as const
export type DeletePhase = (typeof deletePhases)[number]

/** One area's part of a project delete; it must be idempotent, since a crash repeats the phase. */
export interface TeardownStep {
  readonly phase: DeletePhase
  readonly run: (project: ProjectRow, operation: Job<OperationPayload>) => Effect.Effect<void>
}

/** Every registered area's teardown steps, in area order within each phase. */
export class ProjectTeardown extends Context.Service<ProjectTeardown, ReadonlyArray<TeardownStep>>()(
  "@hostplane/core/projects/ProjectTeardown"
) {}
