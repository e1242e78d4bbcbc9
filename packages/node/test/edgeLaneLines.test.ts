import { Effect, Logger, References } from "effect"
import { afterEach, describe, expect, it, vi } from "vitest"
import { lineBatchMs, logEach, makeLineBatches, writeHeldLines } from "../src/edge/EdgeLane.ts"

/** What every logger of the fiber receives, as `Logger.formatStructured` renders it (the fiber id left out). */
const logged = (log: Effect.Effect<void>) => {
  const seen: Array<unknown> = []
  const keeper = (name: string) =>
    Logger.make((options) => {
      const { fiberId: _fiberId, timestamp: _timestamp, ...rest } = Logger.formatStructured.log(options)
      seen.push({ logger: name, ...rest })
    })
  Effect.runSync(
    log.pipe(Effect.annotateLogs({ listener: "edge" }), Effect.provide(Logger.layer([keeper("a"), keeper("b")])))
  )
  return seen
}

const lines = [
  { host: "a.example", method: "GET", path: "/", status: 200, ms: 3 },
  { host: "b.example", method: "POST", path: "/x", status: 504, ms: 5_000 }
]

describe("the edge lane's request lines", () => {
  it("logEach writes to every logger what one annotated logInfo per line writes, the fiber's annotations kept", () => {
    const batched = logged(logEach("edge request", lines))
    const one = logged(
      Effect.forEach(lines, (line) => Effect.logInfo("edge request").pipe(Effect.annotateLogs(line)), { discard: true })
    )
    expect(batched).toEqual(one)
    expect(batched).toHaveLength(4)
    expect(batched[2]).toMatchObject({
      message: "edge request",
      level: "INFO",
      annotations: { listener: "edge", host: "b.example", status: 504 }
    })
  })

  it("writes nothing below the fiber's minimum level, and leaves the fiber's annotations as they were", () => {
    expect(
      logged(logEach("edge request", lines).pipe(Effect.provideService(References.MinimumLogLevel, "Warn")))
    ).toEqual([])
    const after = logged(Effect.andThen(logEach("edge request", lines), Effect.logInfo("next")))
    expect(after.at(-1)).toMatchObject({ message: "next", annotations: { listener: "edge" } })
    expect((after.at(-1) as { annotations: object }).annotations).not.toHaveProperty("host")
  })

  describe("batches", () => {
    afterEach(() => {
      vi.useRealTimers()
    })

    it("the lines of 100 ms go in one batch, in order; a batch still held when the process exits is written then, at once", () => {
      vi.useFakeTimers()
      const written: Array<[Array<number>, boolean]> = []
      const line = makeLineBatches<number>((batch, atExit) => written.push([batch, atExit]))
      line(1)
      line(2)
      vi.advanceTimersByTime(lineBatchMs - 1)
      expect(written).toEqual([])
      line(3)
      vi.advanceTimersByTime(1)
      expect(written).toEqual([[[1, 2, 3], false]])
      line(4)
      line(5)
      writeHeldLines()
      expect(written.slice(1)).toEqual([[[4, 5], true]])
      vi.advanceTimersByTime(lineBatchMs * 2)
      writeHeldLines()
      expect(written).toHaveLength(2)
      expect(vi.getTimerCount()).toBe(0)
    })
  })
})
