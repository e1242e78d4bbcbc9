import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { type InvocationEvent, makeCollector } from "../src/runtime/LogCollector.ts"

const request = { projectId: "p1", deploymentId: "d1", method: "GET", url: "http://app.example/" }

const collected = () => {
  const collector = Effect.runSync(makeCollector)
  const events: Array<InvocationEvent> = []
  collector.setSink((batch) => events.push(...batch))
  return { collector, events }
}

const until = async (check: () => boolean, ms = 5_000) => {
  const deadline = Date.now() + ms
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
  return check()
}

const line = (message: string) => ({ level: "log", message: [message], timestamp: Date.now() })

describe("the log collector joins the edge's end of an invocation with its entry module's reports", () => {
  it("one event per invocation: the edge's outcome and status, the module's lines and exceptions in order", async () => {
    const { collector, events } = collected()
    const invocation = collector.begin(request)
    collector.fromEntry("p1", [{ id: invocation.id, done: false, logs: [line("one")], exceptions: [] }])
    invocation.end({ outcome: "exception", status: null })
    collector.fromEntry("p1", [
      {
        id: invocation.id,
        done: true,
        logs: [line("two")],
        exceptions: [{ name: "TypeError", message: "boom", stack: "TypeError: boom\n at index.js:1" }]
      }
    ])
    invocation.end({ outcome: "ok", status: 200 })
    expect(await until(() => events.length > 0)).toBe(true)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({
      projectId: "p1",
      deploymentId: "d1",
      outcome: "exception",
      response: null,
      request: { method: "GET", url: "http://app.example/" },
      logs: [{ message: ["one"] }, { message: ["two"] }],
      exceptions: [{ name: "TypeError", message: "boom" }]
    })
    expect(events[0]!.truncated).toBeUndefined()
  })

  it("an invocation the module reports nothing for is written after the wait, with no lines", async () => {
    const { collector, events } = collected()
    collector.begin(request).end({ outcome: "ok", status: 204 })
    expect(events).toHaveLength(0)
    expect(await until(() => events.length === 1)).toBe(true)
    expect(events[0]).toMatchObject({ outcome: "ok", response: { status: 204 }, logs: [], exceptions: [] })
  })

  it("an invocation whose module said it left work to waitUntil waits past the second for that work's report", async () => {
    const { collector, events } = collected()
    const invocation = collector.begin(request)
    collector.fromEntry("p1", [{ id: invocation.id, done: false, waiting: true, logs: [], exceptions: [] }])
    invocation.end({ outcome: "ok", status: 200 })
    await new Promise((resolve) => setTimeout(resolve, 1_300))
    expect(events).toHaveLength(0)
    collector.fromEntry("p1", [{ id: invocation.id, done: true, logs: [line("later")], exceptions: [] }])
    expect(await until(() => events.length === 1)).toBe(true)
    expect(events[0]).toMatchObject({ outcome: "ok", response: { status: 200 }, logs: [{ message: ["later"] }] })
  })

  it("a report under another project's invocation id joins nothing", async () => {
    const { collector, events } = collected()
    const invocation = collector.begin(request)
    collector.fromEntry("p2", [{ id: invocation.id, done: true, logs: [line("forged")], exceptions: [] }])
    invocation.end({ outcome: "ok", status: 200 })
    expect(await until(() => events.length === 1)).toBe(true)
    expect(events[0]!.logs).toEqual([])
  })

  it("a forged report that comes before the invocation's own neither joins it nor shadows it: its own lines before and after its end join it", async () => {
    const { collector, events } = collected()
    const invocation = collector.begin(request)
    collector.fromEntry("p2", [{ id: invocation.id, done: false, logs: [line("forged first")], exceptions: [] }])
    collector.fromEntry("p1", [{ id: invocation.id, done: false, logs: [line("own before")], exceptions: [] }])
    collector.fromEntry("p2", [{ id: invocation.id, done: false, logs: [line("forged again")], exceptions: [] }])
    invocation.end({ outcome: "ok", status: 200 })
    collector.fromEntry("p2", [{ id: invocation.id, done: false, logs: [line("forged after")], exceptions: [] }])
    collector.fromEntry("p1", [{ id: invocation.id, done: true, logs: [line("own after")], exceptions: [] }])
    // Ids this collector never gave out join nothing either.
    collector.fromEntry("p1", [{ id: `${invocation.id}0`, done: true, logs: [line("unknown")], exceptions: [] }])
    collector.fromEntry("p1", [{ id: "elsewhere.1", done: true, logs: [line("unknown")], exceptions: [] }])
    expect(await until(() => events.length === 1)).toBe(true)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(events).toHaveLength(1)
    expect(events[0]!.logs.map((one) => one.message)).toEqual([["own before"], ["own after"]])
  })

  it("a timeout is written at once with the lines reported so far; a request that never reached a worker is none", async () => {
    const { collector, events } = collected()
    const invocation = collector.begin(request)
    collector.fromEntry("p1", [{ id: invocation.id, done: false, logs: [line("waiting")], exceptions: [] }])
    invocation.end({ outcome: "timeout", status: null })
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({ outcome: "timeout", response: null, logs: [{ message: ["waiting"] }] })
    collector.begin(request).end(null)
    await new Promise((resolve) => setTimeout(resolve, 1_300))
    expect(events).toHaveLength(1)
  })

  it("many invocations, reported or not, before or after their end: each is written once, with its own lines", async () => {
    const { collector, events } = collected()
    const count = 1_500
    for (let i = 0; i < count; i++) {
      const invocation = collector.begin({ ...request, url: `http://app.example/${i}` })
      const report = { id: invocation.id, done: true, logs: [line(`line ${i}`)], exceptions: [] }
      // A third report before the end, a third after it, a third not at all (written after the wait).
      if (i % 3 === 0) collector.fromEntry("p1", [report])
      invocation.end({ outcome: "ok", status: 200 })
      if (i % 3 === 1) collector.fromEntry("p1", [report])
    }
    expect(await until(() => events.length >= count)).toBe(true)
    expect(new Set(events.map((event) => event.request.url)).size).toBe(count)
    for (const event of events) {
      const i = Number(new URL(event.request.url).pathname.slice(1))
      expect(event.logs.map((one) => one.message)).toEqual(i % 3 === 2 ? [] : [[`line ${i}`]])
    }
  })

  it("a stopping node's drain writes every ended invocation at once and each once; a running one when it ends", () => {
    const { collector, events } = collected()
    const unreported = collector.begin({ ...request, url: "http://app.example/unreported" })
    unreported.end({ outcome: "ok", status: 204 })
    const reported = collector.begin({ ...request, url: "http://app.example/reported" })
    collector.fromEntry("p1", [{ id: reported.id, done: true, logs: [line("in")], exceptions: [] }])
    reported.end({ outcome: "ok", status: 200 })
    const running = collector.begin({ ...request, url: "http://app.example/running" })
    collector.fromEntry("p1", [{ id: running.id, done: false, logs: [line("streaming")], exceptions: [] }])
    // Neither ended one is due yet: each waits for lines that may still come.
    expect(events).toHaveLength(0)
    collector.drain()
    expect(events.map((event) => event.request.url).sort()).toEqual([
      "http://app.example/reported",
      "http://app.example/unreported"
    ])
    expect(events.find((event) => event.request.url.endsWith("/reported"))!.logs).toMatchObject([{ message: ["in"] }])
    running.end({ outcome: "canceled", status: 200 })
    collector.drain()
    collector.drain()
    expect(events).toHaveLength(3)
    expect(events[2]).toMatchObject({ outcome: "canceled", logs: [{ message: ["streaming"] }] })
  })

  it("lines past 256 per invocation are dropped and the event says truncated", async () => {
    const { collector, events } = collected()
    const invocation = collector.begin(request)
    const logs = Array.from({ length: 300 }, (_, i) => line(`line ${i}`))
    collector.fromEntry("p1", [{ id: invocation.id, done: true, logs, exceptions: [] }])
    invocation.end({ outcome: "ok", status: 200 })
    expect(await until(() => events.length === 1)).toBe(true)
    expect(events[0]!.logs).toHaveLength(256)
    expect(events[0]!.logs[255]!.message).toEqual(["line 255"])
    expect(events[0]!.truncated).toBe(true)
  })
})
