import { Config, Context, Duration, Effect, Layer, Option } from "effect"

/** How long and how many events a project's runtime log keeps (decisions.md part 13). */
export interface LogRetentionSetting {
  readonly maxAge: Duration.Duration
  readonly maxEvents: number
}

/** The runtime logs' settings. */
export interface LogsConfigShape {
  /** `SERVICE_WORKER_LOG_RETENTION`, default 24 hours and 10,000 events per project. */
  readonly retention: LogRetentionSetting
  /** How often an idle stream sends a comment line (15 s; tests shorten it). */
  readonly heartbeat: Duration.Duration
}

export const defaultRetention: LogRetentionSetting = { maxAge: Duration.hours(24), maxEvents: 10_000 }

/**
 * `SERVICE_WORKER_LOG_RETENTION`: a comma list of an Effect duration and an event count, either or both, in any
 * order (`24 hours,10000`, `1 hour`, `500`); a part left out keeps its default. Anything else stops the start.
 */
export const parseRetention = (value: string): LogRetentionSetting => {
  const parts = value
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "")
  let retention = defaultRetention
  const seen = new Set<string>()
  for (const part of parts) {
    const kind = /^\d+$/u.test(part) ? "count" : "duration"
    if (seen.has(kind)) throw new Error(`SERVICE_WORKER_LOG_RETENTION: two ${kind}s in "${value}"`)
    seen.add(kind)
    if (kind === "count") {
      const count = Number(part)
      if (!Number.isSafeInteger(count) || count < 1)
        throw new Error("SERVICE_WORKER_LOG_RETENTION: a count is 1 or more")
      retention = { ...retention, maxEvents: count }
    } else {
      const duration = Duration.fromInput(part as Duration.Input)
      if (Option.isNone(duration) || !Duration.isFinite(duration.value) || Duration.toMillis(duration.value) <= 0) {
        throw new Error(
          `SERVICE_WORKER_LOG_RETENTION: "${part}" is not a duration such as "24 hours" or an event count`
        )
      }
      retention = { ...retention, maxAge: duration.value }
    }
  }
  return retention
}

export class LogsConfig extends Context.Service<LogsConfig, LogsConfigShape>()("@hostplane/core/logs/LogsConfig") {
  static readonly make = (overrides: Partial<LogsConfigShape> = {}) =>
    Layer.succeed(LogsConfig, { retention: defaultRetention, heartbeat: Duration.seconds(15), ...overrides })

  /** `SERVICE_WORKER_LOG_RETENTION`. */
  static readonly layerConfig = Layer.unwrap(
    Effect.map(Config.option(Config.String("SERVICE_WORKER_LOG_RETENTION")), (value) =>
      LogsConfig.make(Option.isSome(value) ? { retention: parseRetention(value.value) } : {})
    )
  )
}
