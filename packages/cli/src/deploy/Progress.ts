import { Effect, Schedule } from "effect"
import type { Counter } from "./Bundle.ts"

const MiB = 1024 * 1024
const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`

/**
 * Upload progress on stderr while `upload` runs: on a terminal one line redrawn in place (a bar of the files read,
 * bytes sent and the rate); otherwise a plain line every 25 % of the files read, so logs stay readable.
 */
export const withProgress = <A, E, R>(
  upload: Effect.Effect<A, E, R>,
  counter: Counter,
  totalFileBytes: number,
  terminal: boolean
): Effect.Effect<A, E, R> => {
  const started = performance.now()
  let lastQuarter = 0
  // The rate counts the time until the last byte left, not the server's checks after it.
  let seenBytes = 0
  let lastSent = started
  const fraction = () => (totalFileBytes === 0 ? 1 : Math.min(1, counter.fileBytesRead / totalFileBytes))
  const rate = () => counter.sentBytes / Math.max(0.001, (lastSent - started) / 1000)
  const draw = Effect.sync(() => {
    if (counter.sentBytes !== seenBytes) {
      seenBytes = counter.sentBytes
      lastSent = performance.now()
    }
    if (terminal) {
      const width = 24
      const filled = Math.round(fraction() * width)
      const waiting = fraction() === 1 && performance.now() - lastSent > 500 ? ", the server is checking it" : ""
      process.stderr.write(
        `\r\u001b[2K[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${Math.floor(fraction() * 100)}%  ${mib(counter.sentBytes)} sent  ${mib(rate())}/s${waiting}`
      )
      return
    }
    const quarter = Math.floor(fraction() * 4)
    if (quarter > lastQuarter && quarter < 4) {
      lastQuarter = quarter
      process.stderr.write(`uploading: ${quarter * 25}% of files read, ${mib(counter.sentBytes)} sent\n`)
    }
  })
  const finish = Effect.sync(() => {
    const seconds = (performance.now() - started) / 1000
    if (counter.sentBytes !== seenBytes) lastSent = performance.now()
    if (terminal) process.stderr.write("\r\u001b[2K")
    process.stderr.write(`uploaded ${mib(counter.sentBytes)} in ${seconds.toFixed(1)} s (${mib(rate())}/s)\n`)
  })
  const ticker = draw.pipe(Effect.repeat(Schedule.spaced(terminal ? "100 millis" : "500 millis")))
  return Effect.raceFirst(upload, Effect.andThen(ticker, Effect.never)).pipe(
    Effect.tap(() => finish),
    Effect.onError(() => Effect.sync(() => terminal && process.stderr.write("\r\u001b[2K\n")))
  )
}
