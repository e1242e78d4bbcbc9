import { Effect, Option, Schema } from "effect"
import { Databases } from "../database/Databases.ts"
import { define, handler, JobFailure, type JobHandler, stop } from "../jobs/Job.ts"
import { ProjectId } from "../kernel/Ids.ts"
import { portOn } from "../kernel/Port.ts"
import { AuthProviderName } from "./EndUserAuth.ts"
import { EndUserDirectory } from "./EndUserPorts.ts"

/**
 * A provider delete (spec 4.9) removes that provider's entries from the users' identities in the project's own
 * database; the users stay. The database may be down when the provider is deleted, so the removal is a job of its
 * own, enqueued in the delete's transaction and retried until the database answers. `before` is the delete's time:
 * identities made after it (the provider registered again and used) are kept.
 */
export const identitiesDelete = define({
  kind: "auth_identities_delete",
  payload: Schema.Struct({ projectId: ProjectId, provider: AuthProviderName, before: Schema.String }),
  phases: ["identities"],
  // The default backoff (1 s doubling, at most 5 minutes) over 200 claims keeps trying for about 16 hours.
  maxAttempts: 200
})

export const identitiesDeleteHandler: Effect.Effect<JobHandler, never, Databases | EndUserDirectory> = Effect.gen(
  function* () {
    // A host may give `EndUserDirectory.off`: no project database is reachable then, nothing to remove.
    const databases = yield* Databases
    const directory = portOn(yield* EndUserDirectory)
    return handler(identitiesDelete, {
      run: (_phase, job) =>
        Effect.gen(function* () {
          const { projectId, provider, before } = job.payload
          if (Option.isNone(directory)) {
            yield* Effect.logWarning("end-user identities not removed: this host reaches no project database", {
              projectId,
              provider
            })
            return stop
          }
          // No database (never made, or deleted with its data): no identities left to remove.
          if (!(yield* databases.granted(projectId))) return stop
          const db = yield* databases.binding(projectId)
          if (db === null) {
            return yield* new JobFailure({ message: "the project's database is not reachable", retryable: true })
          }
          const removed = yield* directory.value
            .removeIdentities(db, provider, before)
            .pipe(Effect.mapError((error) => new JobFailure({ message: error.message, retryable: true })))
          yield* Effect.logInfo("end-user identities removed", { projectId, provider, removed })
        }),
      onFailed: (job, error) =>
        Effect.logError("end-user identities of a deleted provider could not be removed", {
          projectId: job.payload.projectId,
          provider: job.payload.provider,
          error
        })
    })
  }
)
