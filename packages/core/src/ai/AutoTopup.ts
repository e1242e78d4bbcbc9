import { Clock, Duration, Effect, Option, Schema } from "effect"
import { PaymentGateway } from "../billing/PaymentGateway.ts"
import { define, handler, JobFailure, type JobHandler, stop } from "../jobs/Job.ts"
import { OrgId } from "../kernel/Ids.ts"
import { isoToMillis, nowIso } from "../kernel/Time.ts"
import { OrgStore } from "../orgs/OrgStore.ts"
import { autoTopupPerDay } from "./Credit.ts"
import { CreditStore } from "./CreditStore.ts"
import { dayOf } from "./Credits.ts"

/** How long an auto top-up waits for its `order.paid` before it ends `failed` (and a later call may start another). */
export const settleWithin = Duration.minutes(10)
const settleEvery = Duration.seconds(15)

/**
 * An AI credit auto top-up (spec 4.10), started when a call leaves the balance below the org's threshold: `claim`
 * counts it against `autoTopupPerDay` (none beyond it), `charge` asks the payment gateway to charge the stored method,
 * `settle` waits for the `order.paid` webhook that raises the balance. One unfinished top-up per org (key = org id),
 * so calls racing below the threshold start one.
 */
export const autoTopup = define({
  kind: "ai_autotopup",
  payload: Schema.Struct({ orgId: OrgId, amountMicroCents: Schema.Number }),
  phases: ["claim", "charge", "settle"],
  maxAttempts: 5 + Math.ceil(Duration.toMillis(settleWithin) / Duration.toMillis(settleEvery)),
  backoff: (attempts) => (attempts <= 5 ? Duration.seconds(2 ** attempts) : settleEvery)
})

export const autoTopupHandler: Effect.Effect<JobHandler, never, CreditStore | OrgStore | PaymentGateway> = Effect.gen(
  function* () {
    const credit = yield* CreditStore
    const orgs = yield* OrgStore
    const gateway = yield* PaymentGateway
    return handler(autoTopup, {
      run: (phase, job) =>
        Effect.gen(function* () {
          const { orgId, amountMicroCents } = job.payload
          if (phase === "claim") {
            const row = yield* credit.find(orgId)
            // Consent withdrawn (or never possible) since the call that started it: nothing to do.
            if (!row.autoTopup.enabled || !row.hasPaymentMethod) return stop
            const day = dayOf(yield* Clock.currentTimeMillis)
            if (!(yield* credit.claimAutoTopup(orgId, day, autoTopupPerDay, yield* nowIso))) return stop
            return
          }
          if (phase === "charge") {
            const org = yield* orgs.findById(orgId)
            if (Option.isNone(org)) return stop
            return yield* gateway
              .chargeSavedMethod({
                product: "credit",
                customer: orgId,
                amountCents: amountMicroCents / 1_000_000,
                metadata: {
                  kind: "ai_credit",
                  microCents: String(amountMicroCents),
                  orgSlug: org.value.slug,
                  topupId: job.id
                },
                reference: job.id
              })
              .pipe(
                Effect.asVoid,
                Effect.mapError(
                  (error) =>
                    new JobFailure({
                      message: `auto top-up charge: ${error.message}`,
                      retryable: error.reason === "unavailable"
                    })
                )
              )
          }
          // settle: the balance rises only through the webhook; wait for a top-up row newer than this job.
          const rows = yield* credit.ledger(orgId, 50, undefined)
          const queuedAt = isoToMillis(job.createdAt)
          if (rows.some((row) => row.kind === "topup" && isoToMillis(row.createdAt) >= queuedAt)) return
          return yield* new JobFailure({ message: "waiting for the order.paid webhook", retryable: true })
        })
    })
  }
)
