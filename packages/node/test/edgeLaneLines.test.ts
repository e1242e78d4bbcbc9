import { Effect, Logger, References } from "effect"
import { describe, expect, it } from "vitest"
import { logEach } from "../src/edge/EdgeLane.ts"

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
})
