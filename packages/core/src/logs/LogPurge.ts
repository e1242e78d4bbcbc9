import { Clock, Duration, Effect, Schema } from "effect"
import { define, handler, type JobHandler } from "../jobs/Job.ts"
import { LogsConfig } from "./LogsConfig.ts"
import { LogStore } from "./LogStore.ts"

/**
 * The runtime logs' retention (decisions.md part 13: 24 hours or a project's last 10,000 events, by
 * `SERVICE_WORKER_LOG_RETENTION`): one job of the kind always exists, every minute, so recording an event stays one
 * insert. Between two runs a busy project may hold a minute's events past the count; the list never shows events
 * older than the age.
 */
export const logPurge = define({
  kind: "worker_log_purge",
  payload: Schema.Struct({}),
  phases: ["purge"],
  every: Duration.minutes(1),
  singleton: { payload: {} }
})

export const logPurgeHandler: Effect.Effect<JobHandler, never, LogStore | LogsConfig> = Effect.gen(function* () {
  const store = yield* LogStore
  const { retention } = yield* LogsConfig
  return handler(logPurge, {
    run: () =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const purged = yield* store.purge({
          since: new Date(now - Duration.toMillis(retention.maxAge)).toISOString(),
          keep: retention.maxEvents
        })
        if (purged > 0) yield* Effect.logDebug("runtime log events purged", { events: purged })
      })
  })
})
