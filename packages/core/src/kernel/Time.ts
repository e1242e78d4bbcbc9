import { Clock, DateTime, Duration, Effect } from "effect"

/** The current instant as an RFC 3339 UTC string (the wire form of every time). */
export const nowIso: Effect.Effect<string> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

/** The RFC 3339 UTC string `duration` after now. */
export const isoAfter = (duration: Duration.Duration): Effect.Effect<string> =>
  Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms + Duration.toMillis(duration)).toISOString())

/** Beyond this many milliseconds from the epoch a JavaScript date is invalid. */
const maxMillis = 8.64e15
let datedSecond = Number.NaN
let datedPrefix = ""

/**
 * `new Date(ms).toISOString()`, or undefined for no valid instant, with each second's text made once: a busy node
 * dates hundreds of events a second, and most share their second with the one before.
 */
export const isoOfMillis = (ms: number): string | undefined => {
  const whole = Math.trunc(ms)
  if (!(Math.abs(whole) <= maxMillis)) return undefined
  const second = Math.floor(whole / 1000)
  if (second !== datedSecond) {
    // "2026-11-30T15:30:00.000Z" without its "000Z" (a year past 9999 has more digits, and a sign).
    datedPrefix = new Date(second * 1000).toISOString().slice(0, -4)
    datedSecond = second
  }
  const millis = whole - second * 1000
  return `${datedPrefix}${millis < 10 ? "00" : millis < 100 ? "0" : ""}${millis}Z`
}

export const isoToMillis = (iso: string): number => DateTime.toEpochMillis(DateTime.makeUnsafe(iso))

/** The RFC 3339 UTC string `duration` after `iso`: one instant's deadline, with no second read of the clock. */
export const isoPlus = (iso: string, duration: Duration.Duration): string =>
  new Date(isoToMillis(iso) + Duration.toMillis(duration)).toISOString()

const rfc3339 = /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(\.\d+)?(?:[Zz]|([+-])(\d\d):(\d\d))$/u

/**
 * The instant of an RFC 3339 date-time as given on input (any offset, `Z` included), or undefined when it is none:
 * no offset (a local time means nothing to a server), a date alone, or a day or time that does not exist. A leap
 * second (`:60`) has no JavaScript instant and is refused too.
 */
export const rfc3339Millis = (text: string): number | undefined => {
  const match = rfc3339.exec(text)
  if (match === null) return undefined
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number
  ]
  const offsetHours = Number(match[9] ?? 0)
  const offsetMinutes = Number(match[10] ?? 0)
  const daysInMonth = month >= 1 && month <= 12 ? new Date(Date.UTC(year, month, 0)).getUTCDate() : 0
  if (day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59) return undefined
  if (offsetHours > 23 || offsetMinutes > 59) return undefined
  const fraction = match[7] === undefined ? 0 : Math.floor(Number(`0${match[7]}`) * 1000)
  const local = Date.UTC(year, month - 1, day, hour, minute, second, fraction)
  const offset = (match[8] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000
  return local - offset
}
