import { Logs } from "@hostplane/core"
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
