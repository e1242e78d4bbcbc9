import { Clock, Duration, Effect, Schema } from "effect"
import { Settings } from "../kernel/Settings.ts"
import { define, handler, type JobHandler } from "../jobs/Job.ts"
import { EmailStore } from "./EmailStore.ts"

/**
 * The mail log's retention (spec part 8, `keepDays` by plan), and the relay's held rows of processes that died
 * mid-send (their lease ended; they count toward no cap, and a project's next send deletes its own): one job of the
 * kind always exists, hourly.
 */
export const mailPurge = define({
  kind: "mail_log_purge",
  payload: Schema.Struct({}),
  phases: ["purge"],
  every: Duration.hours(1),
  singleton: { payload: {} }
})

const cutoff = (now: number, days: number) => new Date(now - days * 86_400_000).toISOString()

export const mailPurgeHandler: Effect.Effect<JobHandler, never, EmailStore | Settings> = Effect.map(
  Effect.all([Effect.service(EmailStore), Effect.service(Settings)]),
  ([store, { planLimits }]) =>
    handler(mailPurge, {
      run: () =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const purged = yield* store.purgeLog({
            free: cutoff(now, planLimits.free.mailKeepDays),
            pro: cutoff(now, planLimits.pro.mailKeepDays)
          })
          if (purged > 0) yield* Effect.logInfo("mail log purged", { rows: purged })
          const released = yield* store.releaseExpired(new Date(now).toISOString())
          if (released > 0) yield* Effect.logInfo("held relay slots of stopped processes released", { rows: released })
        })
    })
)
