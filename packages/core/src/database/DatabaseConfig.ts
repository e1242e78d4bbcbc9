import { Config, Context, Duration, Effect, Layer, Option } from "effect"

/** The database add-on's settings (decisions.md part 8). */
export interface DatabaseConfigShape {
  /** The recovery-point grid: a generation on every boundary, aligned to the clock. Default one hour. */
  readonly backupInterval: Duration.Duration
  /** How often each stored generation is re-read and re-hashed. Default one day. */
  readonly checkInterval: Duration.Duration
  /**
   * Testing only: how long a sealing generation waits once its backup has started, so a crash test can kill the
   * process mid-phase deterministically. Default zero.
   */
  readonly sealingDelay: Duration.Duration
}

export class DatabaseConfig extends Context.Service<DatabaseConfig, DatabaseConfigShape>()(
  "@hostplane/core/database/DatabaseConfig"
) {
  static readonly make = (overrides: Partial<DatabaseConfigShape> = {}) =>
    Layer.succeed(DatabaseConfig, {
      backupInterval: Duration.hours(1),
      checkInterval: Duration.days(1),
      sealingDelay: Duration.zero,
      ...overrides
    })

  /**
   * `SERVICE_DB_BACKUP_INTERVAL` (an Effect duration such as `1 hour` or `30 seconds`) and, for crash tests,
   * `SERVICE_DB_TEST_SEALING_DELAY`.
   */
  static readonly layerConfig = Layer.unwrap(
    Effect.map(
      Config.all({
        interval: Config.option(Config.Duration("SERVICE_DB_BACKUP_INTERVAL")),
        delay: Config.option(Config.Duration("SERVICE_DB_TEST_SEALING_DELAY"))
      }),
      ({ interval, delay }) =>
        DatabaseConfig.make({
          ...(Option.isSome(interval) ? { backupInterval: interval.value } : {}),
          ...(Option.isSome(delay) ? { sealingDelay: delay.value } : {})
        })
    )
  )
}
