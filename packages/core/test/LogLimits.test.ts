import { Kernel, Logs } from "@hostplane/core"
import { Duration } from "effect"
import { describe, expect, it } from "vitest"

const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value))

describe("runtime log limits (decisions.md part 13)", () => {
  it("a message within 16 KiB is kept as given", () => {
    expect(Logs.boundMessage(["a", 1, { b: [true, null] }])).toEqual({
      message: ["a", 1, { b: [true, null] }],
      cut: false
    })
  })

  it("the argument crossing 16 KiB is cut (a string to its first bytes, an object to its JSON text); the rest dropped", () => {
    const { message, cut } = Logs.boundMessage(["head", "y".repeat(20_000), "tail"])
    expect(cut).toBe(true)
    expect(message).toHaveLength(2)
    expect(bytes(message)).toBe(16 * 1024)
    const object = Logs.boundMessage([{ big: "z".repeat(20_000) }])
    expect(object.message[0]).toMatch(/^\{"big":"z+$/)
    expect(bytes(object.message)).toBeLessThanOrEqual(16 * 1024)
  })

  it("escapes and multi-byte characters never take a line past 16 KiB, nor split a character", () => {
    for (const text of ['"'.repeat(20_000), "\u0001".repeat(20_000), "😀".repeat(10_000), "é".repeat(9_000)]) {
      const { message, cut } = Logs.boundMessage([text])
      expect(cut).toBe(true)
      expect(bytes(message)).toBeLessThanOrEqual(16 * 1024)
      expect(bytes(message)).toBeGreaterThan(16 * 1024 - 8)
      expect(text.startsWith(message[0] as string)).toBe(true)
      expect(message[0] as string).not.toMatch(/\uFFFD/)
    }
  })

  it("an event's instants are RFC 3339 UTC with milliseconds, each what Date gives; no instant is the receipt's", () => {
    const received = "2026-11-30T15:00:00.000Z"
    const input = (timestamp: number | string, line: number | string = timestamp): Logs.LogEventInput => ({
      projectId: "prj_a",
      deploymentId: "dep_a",
      timestamp,
      outcome: "ok",
      request: { method: "GET", url: "http://app.example/" },
      response: { status: 200 },
      durationMs: 0,
      logs: [{ level: "log", message: ["x"], timestamp: line }],
      exceptions: []
    })
    const base = Date.UTC(2026, 10, 30, 14, 59, 59)
    // Within one second and across it, short milliseconds, fractions, before 1970, past year 9999, and one the same
    // second again after another.
    const instants = [base, base + 7, base + 42, base + 999, base + 1000, base + 1001.9, base + 7, -1, -1001.5, 0]
    for (const at of [...instants, 253402300800000, 8.64e15, -8.64e15]) {
      const event = Logs.boundEvent(input(at), Kernel.makeId("log", "log_x"), received)
      expect(event.timestamp).toBe(new Date(at).toISOString())
      expect(event.logs[0]!.timestamp).toBe(new Date(at).toISOString())
    }
    for (const at of [Number.NaN, Number.POSITIVE_INFINITY, 8.64e15 + 1, -8.64e15 - 1]) {
      expect(Logs.boundEvent(input(at), Kernel.makeId("log", "log_x"), received).timestamp).toBe(received)
    }
    const given = Logs.boundEvent(
      input("2026-11-30T16:00:00.5+01:00", base + 3),
      Kernel.makeId("log", "log_x"),
      received
    )
    expect(given.timestamp).toBe("2026-11-30T15:00:00.500Z")
    expect(given.logs[0]!.timestamp).toBe(new Date(base + 3).toISOString())
    expect(Logs.boundEvent(input("yesterday"), Kernel.makeId("log", "log_x"), received).timestamp).toBe(received)
  })

  it("SERVICE_WORKER_LOG_RETENTION: a duration, a count, or both; anything else refused", () => {
    expect(Logs.parseRetention("24 hours,10000")).toEqual({ maxAge: Duration.hours(24), maxEvents: 10_000 })
    expect(Logs.parseRetention("500")).toEqual({ maxAge: Duration.hours(24), maxEvents: 500 })
    expect(Logs.parseRetention("1 hour")).toEqual({ maxAge: Duration.hours(1), maxEvents: 10_000 })
    expect(Logs.parseRetention(" 50000 , 7 days ")).toEqual({ maxAge: Duration.days(7), maxEvents: 50_000 })
    for (const bad of ["0", "1 hour,2 hours", "10,20", "forever", "-5 minutes", "0 seconds"]) {
      expect(() => Logs.parseRetention(bad)).toThrow(/SERVICE_WORKER_LOG_RETENTION/)
    }
  })
})
