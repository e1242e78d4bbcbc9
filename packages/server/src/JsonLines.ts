import { Logger, References } from "effect"

const isPlain = (value: unknown): value is string | number | boolean | null =>
  value === null ||
  typeof value === "string" ||
  (typeof value === "number" && Number.isFinite(value)) ||
  typeof value === "boolean"

const allPlain = (record: Readonly<Record<string, unknown>>): boolean => {
  for (const key in record) if (!isPlain(record[key])) return false
  return true
}

let lastMillis = Number.NaN
let lastIso = ""

/** `toISOString` costs about as much as the rest of the line: requests in the same millisecond share it. */
const isoOf = (date: Date): string => {
  const millis = date.getTime()
  if (millis !== lastMillis) {
    lastMillis = millis
    lastIso = date.toISOString()
  }
  return lastIso
}

/**
 * `Logger.formatJson`'s line, built with one `JSON.stringify` when the message and every annotation are plain values
 * (a request's line always is): nothing there can hold a `Redacted`, so the redacting replacer has nothing to do.
 * Anything else (objects, causes, spans) goes through `Logger.formatJson` itself.
 */
export const formatJsonLine: Logger.Logger<unknown, string> = Logger.make((options) => {
  const message = options.message
  const single = Array.isArray(message) ? (message.length === 1 ? message[0] : undefined) : message
  const annotations = options.fiber.getRef(References.CurrentLogAnnotations)
  if (
    !isPlain(single) ||
    options.cause.reasons.length > 0 ||
    options.fiber.getRef(References.CurrentLogSpans).length > 0 ||
    !allPlain(annotations)
  ) {
    return Logger.formatJson.log(options)
  }
  // The same keys in the same order as Logger.formatJson writes them (a test pins the two lines equal).
  return `{"message":${JSON.stringify(single)},"level":"${options.logLevel.toUpperCase()}","timestamp":"${isoOf(options.date)}","annotations":${JSON.stringify(annotations)},"spans":{},"fiberId":"#${options.fiber.id}"}`
})

/**
 * Lines written to stdout in batches: one `write` per turn of the event loop instead of one per line (a synchronous
 * write per request cost more than the rest of the log path). Whatever is pending is written before the process exits.
 */
export const batchedStdout = (): ((line: string) => void) => {
  let pending: Array<string> = []
  const flush = () => {
    if (pending.length === 0) return
    const text = pending.join("")
    pending = []
    process.stdout.write(text)
  }
  process.once("exit", flush)
  return (line) => {
    if (pending.length === 0) setImmediate(flush)
    pending.push(`${line}\n`)
  }
}
