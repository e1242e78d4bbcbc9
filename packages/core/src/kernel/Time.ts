import { Clock, DateTime, Duration, Effect } from "effect"

/** The current instant as an RFC 3339 UTC string (the wire form of every time). */
export const nowIso: Effect.Effect<string> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

/** The RFC 3339 UTC string `duration` after now. */
export const isoAfter = (duration: Duration.Duration): Effect.Effect<string> =>
  Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms + Duration.toMillis(duration)).toISOString())

export const isoToMillis = (iso: string): number => DateTime.toEpochMillis(DateTime.makeUnsafe(iso))
