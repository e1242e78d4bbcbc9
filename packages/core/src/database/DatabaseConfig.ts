import { Config, Context, Duration, Effect, Layer, Option } from "effect"

/** The database add-on's settings (decisions.md part 8). */
export interface DatabaseConfigShape {
  /** The recovery-point grid: a generation on every boundary, aligned to the clock. Default one hour. */
  readonly backupInterval: Duration.Duration
  /** How often each stored generation is re-read and re-hashed. Default one day. */
  readonly checkInterval: Duration.Duration
  /**
   * How long a database home (a replica's embedded node) may stay silent before it counts as lost: its databases are
   * then rebuilt on a live replica from their newest sound generation (a `restore` operation), and writes after that
   * generation are gone. Default 30 minutes; `null` (`off`) never moves a database.
   */
  readonly homeLostAfter: Duration.Duration | null
  /**
   * Testing only: how often each replica runs its database rounds (the grid's generations, the re-hash checks, the
   * adoption of a lost home's databases), which also renew its home's sign of life. Default 5 seconds.
   */
  readonly roundEvery: Duration.Duration
  /**
   * Testing only: how long a sealing generation waits once its backup has started, so a crash test can kill the
   * process mid-phase deterministically. Default zero.
   */
  readonly sealingDelay: Duration.Duration
}

/** `off`, or an Effect duration such as `30 minutes`. */
export const parseHomeLostAfter = (value: string): Duration.Duration | null => {
  const trimmed = value.trim()
  if (trimmed === "off") return null
  const parsed = Duration.fromInput(trimmed as Duration.Input)
  if (Option.isNone(parsed) || Duration.toMillis(parsed.value) <= 0) {
    throw new Error(`SERVICE_DB_HOME_LOST_AFTER: expected a duration such as "30 minutes", or off`)
  }
  return parsed.value
}

export class DatabaseConfig extends Context.Service<DatabaseConfig, DatabaseConfigShape>()(
  "@hostplane/core/database/DatabaseConfig"
) {
  static readonly make = (overrides: Partial<DatabaseConfigShape> = {}) =>
    Layer.succeed(DatabaseConfig, {
      backupInterval: Duration.hours(1),
      checkInterval: Duration.days(1),
      homeLostAfter: Duration.minutes(30),
      roundEvery: Duration.seconds(5),
      sealingDelay: Duration.zero,
      ...overrides
    })

  /**
   * `SERVICE_DB_BACKUP_INTERVAL` (an Effect duration such as `1 hour` or `30 seconds`), `SERVICE_DB_HOME_LOST_AFTER`
   * (a duration or `off`) and, for tests, `SERVICE_DB_ROUND_EVERY` and `SERVICE_DB_TEST_SEALING_DELAY`.
   */
  static readonly layerConfig = Layer.unwrap(
    Effect.map(
      Config.all({
        interval: Config.option(Config.Duration("SERVICE_DB_BACKUP_INTERVAL")),
        lostAfter: Config.option(Config.String("SERVICE_DB_HOME_LOST_AFTER")),
        rounds: Config.option(Config.Duration("SERVICE_DB_ROUND_EVERY")),
        delay: Config.option(Config.Duration("SERVICE_DB_TEST_SEALING_DELAY"))
      }),
      ({ interval, lostAfter, rounds, delay }) =>
        DatabaseConfig.make({
          ...(Option.isSome(interval) ? { backupInterval: interval.value } : {}),
          ...(Option.isSome(lostAfter) ? { homeLostAfter: parseHomeLostAfter(lostAfter.value) } : {}),
          ...(Option.isSome(rounds) ? { roundEvery: rounds.value } : {}),
          ...(Option.isSome(delay) ? { sealingDelay: delay.value } : {})
        })
    )
  )
}
