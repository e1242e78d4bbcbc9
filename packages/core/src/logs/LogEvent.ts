import { Schema } from "effect"
import type { LogEventId, ProjectId } from "../kernel/Ids.ts"
import { isoOfMillis, rfc3339Millis } from "../kernel/Time.ts"

/** decisions.md part 13: how an invocation ended; `timeout` is the edge's 504, `canceled` the client going away. */
export const LogOutcome = Schema.Literals(["ok", "exception", "timeout", "canceled"])
export type LogOutcome = typeof LogOutcome.Type

export const LogLevel = Schema.Literals(["debug", "info", "log", "warn", "error"])
export type LogLevel = typeof LogLevel.Type

export const LogLine = Schema.Struct({
  level: LogLevel,
  message: Schema.Array(Schema.Unknown).annotate({ description: "The `console` call's arguments as JSON values." }),
  timestamp: Schema.String
}).annotate({ identifier: "LogLine" })
export type LogLine = typeof LogLine.Type

export const LogException = Schema.Struct({
  name: Schema.String,
  message: Schema.String,
  stack: Schema.String
}).annotate({ identifier: "LogException" })
export type LogException = typeof LogException.Type

/** One invocation of a project's worker (decisions.md part 13), as listed and streamed. */
export const LogEvent = Schema.Struct({
  id: Schema.String,
  deploymentId: Schema.String,
  timestamp: Schema.String.annotate({ description: "When the invocation started (RFC 3339 UTC)." }),
  outcome: LogOutcome,
  request: Schema.Struct({ method: Schema.String, url: Schema.String }),
  response: Schema.NullOr(Schema.Struct({ status: Schema.Number })).annotate({
    description: "Null unless the worker answered."
  }),
  durationMs: Schema.Number,
  logs: Schema.Array(LogLine),
  exceptions: Schema.Array(LogException),
  truncated: Schema.Boolean.annotate({
    description: "True when log lines past 256 per event, or text past 16 KiB per line, were dropped."
  })
}).annotate({ identifier: "LogEvent" })
export type LogEvent = typeof LogEvent.Type

/** A page of a project's events, newest first; `nextCursor` fetches the older ones, null on the last page. */
export const LogEventPage = Schema.Struct({
  items: Schema.Array(LogEvent),
  nextCursor: Schema.NullOr(Schema.String)
}).annotate({ identifier: "LogEventPage" })
export type LogEventPage = typeof LogEventPage.Type

/** An event as the stores keep it: the wire event with its project. */
export interface LogEventRow {
  readonly projectId: ProjectId
  readonly event: LogEvent & { readonly id: LogEventId }
}

const Instant = Schema.Union([Schema.String, Schema.Number])

/**
 * What a node reports for one invocation (a workerd tail event mapped to its project and deployment). The service
 * bounds it (`boundEvent`), so a collector may pass what the runtime gave it.
 */
export const LogEventInput = Schema.Struct({
  projectId: Schema.String,
  deploymentId: Schema.String,
  timestamp: Instant.annotate({ description: "RFC 3339, or epoch milliseconds." }),
  outcome: LogOutcome,
  request: Schema.Struct({ method: Schema.String, url: Schema.String }),
  response: Schema.NullOr(Schema.Struct({ status: Schema.Number })),
  durationMs: Schema.Number,
  logs: Schema.Array(
    Schema.Struct({
      level: Schema.String,
      message: Schema.Array(Schema.Unknown),
      timestamp: Instant
    })
  ),
  exceptions: Schema.Array(
    Schema.Struct({ name: Schema.String, message: Schema.String, stack: Schema.optionalKey(Schema.String) })
  ),
  truncated: Schema.optionalKey(
    Schema.Boolean.annotate({ description: "The node's runtime already dropped part of the output (its own limit)." })
  )
}).annotate({ identifier: "LogEventInput" })
export type LogEventInput = typeof LogEventInput.Type

/** What a node on another machine posts to `POST /v1/node/logs`: 1 to 100 events. */
export const LogReport = Schema.Struct({
  events: Schema.Array(LogEventInput).check(Schema.isMinLength(1), Schema.isMaxLength(100))
}).annotate({ identifier: "LogReport" })
export type LogReport = typeof LogReport.Type

export const LogReportAccepted = Schema.Struct({
  accepted: Schema.Number.annotate({ description: "Events kept (those of projects that no longer exist are not)." })
}).annotate({ identifier: "LogReportAccepted" })

/** decisions.md part 13: at most 256 log lines per event, each at most 16 KiB. */
export const maxLines = 256
export const maxLineBytes = 16 * 1024
/** Not in the decisions: bounds what one event can store, so a throwing loop cannot make an event of megabytes. */
export const maxExceptions = 16

const encoder = new TextEncoder()
const utf8Bytes = (text: string): number => encoder.encode(text).length

/** The longest prefix of `text` within `maxBytes` UTF-8 bytes, never splitting a code point. */
export const cutUtf8 = (text: string, maxBytes: number): string => {
  if (text.length * 3 <= maxBytes || utf8Bytes(text) <= maxBytes) return text
  let used = 0
  let end = 0
  for (const char of text) {
    const size = utf8Bytes(char)
    if (used + size > maxBytes) break
    used += size
    end += char.length
  }
  return text.slice(0, end)
}

/**
 * The longest prefix of `text` whose JSON string (quotes excluded) fits in `room` UTF-8 bytes, never splitting a
 * surrogate pair: escapes (quotes, control characters) make the JSON longer than the text, so it is searched for.
 */
const longestJsonPrefix = (text: string, room: number): string => {
  const fits = (end: number) => utf8Bytes(JSON.stringify(text.slice(0, end))) - 2 <= room
  let low = 0
  let high = Math.min(text.length, Math.max(room, 0))
  while (low < high) {
    const middle = Math.ceil((low + high) / 2)
    if (fits(middle)) low = middle
    else high = middle - 1
  }
  const code = text.charCodeAt(low - 1)
  return low > 0 && code >= 0xd800 && code <= 0xdbff ? text.slice(0, low - 1) : text.slice(0, low)
}

const jsonText = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? "null"
  } catch {
    return JSON.stringify(String(value))
  }
}

/**
 * A `console` call's arguments within `maxLineBytes` of JSON: arguments are kept in order while they fit; the one
 * that crosses the limit is cut (a string to its first bytes, any other value to its JSON text, cut) and the rest
 * are dropped.
 */
export const boundMessage = (
  message: ReadonlyArray<unknown>
): { readonly message: ReadonlyArray<unknown>; readonly cut: boolean } => {
  const whole = jsonText(message)
  if (whole.length <= maxLineBytes / 3 || utf8Bytes(whole) <= maxLineBytes) {
    return { message: JSON.parse(whole) as ReadonlyArray<unknown>, cut: false }
  }
  const kept: Array<unknown> = []
  let used = 2
  for (const argument of message) {
    const text = jsonText(argument)
    const separator = kept.length > 0 ? 1 : 0
    const size = utf8Bytes(text) + separator
    if (used + size <= maxLineBytes) {
      kept.push(JSON.parse(text))
      used += size
      continue
    }
    const room = maxLineBytes - used - separator - 2
    const part = longestJsonPrefix(typeof argument === "string" ? argument : text, room)
    if (part !== "") kept.push(part)
    break
  }
  return { message: kept, cut: true }
}

const levels: ReadonlySet<string> = new Set(LogLevel.literals)
const none: ReadonlyArray<never> = Object.freeze([])

/** An instant as RFC 3339 UTC with milliseconds; `fallback` when it is none. */
const isoOf = (instant: string | number, fallback: string): string => {
  const millis = typeof instant === "number" ? instant : rfc3339Millis(instant)
  return millis === undefined ? fallback : (isoOfMillis(millis) ?? fallback)
}

const bounded = (text: string): { readonly text: string; readonly cut: boolean } => {
  const cut = cutUtf8(text, maxLineBytes)
  return { text: cut, cut: cut.length !== text.length }
}

/**
 * The stored event of a node's report, within part 13's limits: 256 log lines of 16 KiB, `truncated` when anything
 * was dropped; unknown levels become `log`, times RFC 3339 UTC (`receivedAt` when the node's is unreadable).
 */
export const boundEvent = (input: LogEventInput, id: LogEventId, receivedAt: string): LogEventRow["event"] => {
  let truncated = input.truncated === true || input.logs.length > maxLines || input.exceptions.length > maxExceptions
  const timestamp = isoOf(input.timestamp, receivedAt)
  // Most invocations print nothing and throw nothing: no copies of their empty lists.
  const logs =
    input.logs.length === 0
      ? none
      : input.logs.slice(0, maxLines).map((line): LogLine => {
          const { message, cut } = boundMessage(line.message)
          if (cut) truncated = true
          return {
            level: levels.has(line.level) ? (line.level as LogLevel) : "log",
            message,
            timestamp: isoOf(line.timestamp, timestamp)
          }
        })
  const exceptions =
    input.exceptions.length === 0
      ? none
      : input.exceptions.slice(0, maxExceptions).map((exception): LogException => {
          const [name, message, stack] = [exception.name, exception.message, exception.stack ?? ""].map(bounded)
          if (name!.cut || message!.cut || stack!.cut) truncated = true
          return { name: name!.text, message: message!.text, stack: stack!.text }
        })
  const url = bounded(input.request.url)
  if (url.cut) truncated = true
  return {
    id,
    deploymentId: input.deploymentId,
    timestamp,
    outcome: input.outcome,
    request: { method: cutUtf8(input.request.method, 32), url: url.text },
    response: input.response === null ? null : { status: Math.trunc(input.response.status) },
    durationMs: Number.isFinite(input.durationMs) ? Math.max(0, Math.round(input.durationMs)) : 0,
    logs,
    exceptions,
    truncated
  }
}
