import { Effect, Logger, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import { formatJsonLine } from "../src/JsonLines.ts"

/** Runs `log` with both formatters and returns each one's line. */
const linesOf = (log: Effect.Effect<void>) => {
  const lines: Array<[string, string]> = []
  const both = Logger.make((options) => {
    lines.push([formatJsonLine.log(options), Logger.formatJson.log(options)])
  })
  Effect.runSync(log.pipe(Effect.provide(Logger.layer([both]))))
  return lines
}

describe("formatJsonLine", () => {
  it("writes a request's line exactly as Logger.formatJson does", () => {
    const [[fast, reference]] = linesOf(
      Effect.logInfo("request").pipe(
        Effect.annotateLogs({ requestId: "req_1", method: "GET", path: "/v1/me", status: 200, ms: 3, ok: true })
      )
    ) as [[string, string]]
    expect(fast).toBe(reference)
    expect(JSON.parse(fast)).toMatchObject({ message: "request", level: "INFO", annotations: { status: 200 } })
  })

  it("leaves anything that is not a plain value to Logger.formatJson, so a Redacted stays redacted", () => {
    const secret = Redacted.make("hunter2")
    const lines = linesOf(
      Effect.gen(function* () {
        yield* Effect.logInfo("sealed", { secret })
        yield* Effect.logWarning("annotated").pipe(Effect.annotateLogs({ secret }))
        yield* Effect.logError("failed", new Error("boom"))
        yield* Effect.logInfo("in a span").pipe(Effect.withLogSpan("outer"))
      })
    )
    expect(lines).toHaveLength(4)
    for (const [fast, reference] of lines) {
      expect(fast).toBe(reference)
      expect(fast).not.toContain("hunter2")
    }
  })
})
