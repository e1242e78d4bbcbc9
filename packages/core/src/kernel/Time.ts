import { Clock, DateTime, Duration, Effect } from "effect"

/** The current instant as an RFC 3339 UTC string (the wire form of every time). */
export const nowIso: Effect.Effect<string> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

/** The RFC 3339 UTC string `duration` after now. */
export const isoAfter = (duration: Duration.Duration): Effect.Effect<string> =>
  Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms + Duration.toMillis(duration)).toISOString())

export const isoToMillis = (iso: string): number => DateTime.toEpochMillis(DateTime.makeUnsafe(iso))

/** The RFC 3339 UTC string `duration` after `iso`: one instant's deadline, with no second read of the clock. */
export const isoPlus = (iso: string, duration: Duration.Duration): string =>
  new Date(isoToMillis(iso) + Duration.toMillis(duration)).toISOString()
