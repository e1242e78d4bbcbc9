import type { Logs } from "@hostplane/core"
import { describe, expect, it } from "vitest"
import { maxReportBytes, reportsOf } from "../src/remote/NodeApiClient.ts"

const event = (index: number, lines: ReadonlyArray<string> = []): Logs.LogEventInput => ({
  projectId: "prj_remote",
  deploymentId: "dep_remote",
  timestamp: 1_700_000_000_000 + index,
  outcome: "ok",
  request: { method: "GET", url: `http://far.example/${index}` },
  response: { status: 200 },
  durationMs: 3,
  logs: lines.map((line) => ({ level: "log", message: [line], timestamp: 1_700_000_000_000 + index })),
  exceptions: []
})

const parsed = (reports: ReadonlyArray<string>) =>
  reports.map((report) => JSON.parse(report) as { events: Array<Logs.LogEventInput> })

/** `POST /v1/node/logs` takes 1 to 100 events and at most 1 MiB: how a remote node cuts its batches. */
describe("a remote node's invocation reports", () => {
  it("carries every event once, in order, at most 100 a report", () => {
    const events = Array.from({ length: 250 }, (_, index) => event(index))
    const reports = parsed(reportsOf(events))
    expect(reports.map((report) => report.events.length)).toEqual([100, 100, 50])
    expect(reports.flatMap((report) => report.events)).toEqual(events)
    expect(reportsOf([])).toEqual([])
  })

  it("cuts by bytes too: no report passes the limit, and events of many lines keep them all when they fit alone", () => {
    const line = "x".repeat(16 * 1024 - 64)
    const events = Array.from({ length: 12 }, (_, index) =>
      event(
        index,
        Array.from({ length: 20 }, () => line)
      )
    )
    const reports = reportsOf(events)
    expect(reports.length).toBeGreaterThan(1)
    for (const report of reports) expect(Buffer.byteLength(report)).toBeLessThanOrEqual(maxReportBytes)
    expect(parsed(reports).flatMap((report) => report.events)).toEqual(events)
  })

  it("an event too large for any report keeps its first lines that fit and says truncated", () => {
    const line = "y".repeat(16 * 1024 - 64)
    const huge = event(
      1,
      Array.from({ length: 256 }, (_, index) => `${index} ${line}`)
    )
    const reports = reportsOf([event(0), huge, event(2)])
    for (const report of reports) expect(Buffer.byteLength(report)).toBeLessThanOrEqual(maxReportBytes)
    const sent = parsed(reports).flatMap((report) => report.events)
    expect(sent.map((item) => item.request.url)).toEqual([0, 1, 2].map((index) => `http://far.example/${index}`))
    const cut = sent[1]!
    expect(cut.truncated).toBe(true)
    expect(cut.logs.length).toBeGreaterThan(10)
    expect(cut.logs.length).toBeLessThan(256)
    expect(cut.logs).toEqual(huge.logs.slice(0, cut.logs.length))
    expect(sent[0]!.truncated).toBeUndefined()
  })
})
