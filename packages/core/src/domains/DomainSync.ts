import { Duration, Effect, Schema } from "effect"
import { define, handler, JobFailure, type JobHandler } from "../jobs/Job.ts"
import { Domains } from "./Domains.ts"

/**
 * The daily registrar sync of decisions.md part 10: walks the registrar's paged list and marks a domain the account no
 * longer holds `transferred_out` (the only signal of a finished transfer), one found again `active`, one past its
 * expiry `expired`. One job of the kind always exists; several replicas never run it at once.
 */
export const domainSync = define({
  kind: "domain_sync",
  payload: Schema.Struct({}),
  phases: ["sync"],
  every: Duration.days(1),
  singleton: { payload: {} }
})

export const domainSyncHandler: Effect.Effect<JobHandler, never, Domains> = Effect.map(
  Effect.service(Domains),
  (domains) =>
    handler(domainSync, {
      run: () =>
        domains.syncAll.pipe(
          Effect.asVoid,
          Effect.mapError(
            (error) => new JobFailure({ message: `registrar ${error.reason}: ${error.message}`, retryable: true })
          )
        )
    })
)
