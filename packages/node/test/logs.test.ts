import { manifestEntry } from "@hostplane/testkit"
import { describe, expect, it } from "vitest"
import { openStream } from "../../http/test/support/EventStream.ts"
import { edgeCall, eventually, laterRoute, useRuntimeSuite } from "./support/RuntimeServer.ts"

/** Prints, throws or floods its console by path: what decisions.md part 13's runtime logs must carry and bound. */
const worker = `export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url)
    ${laterRoute}
    if (url.pathname === "/much-later") {
      ctx.waitUntil(scheduler.wait(1500).then(() => console.log("long after the response")))
      return new Response("in a while")
    }
    if (url.pathname === "/throw") { console.warn("about to throw", { n: 1 }); throw new RangeError("out of range") }
    if (url.pathname === "/exact") {
      for (let i = 0; i < 256; i++) console.log(i)
      return new Response("exactly")
    }
    if (url.pathname === "/flood") {
      const line = "x".repeat(20 * 1024)
      for (let i = 0; i < 300; i++) console.log(i, line)
      console.log("y".repeat(1024 * 1024))
      return new Response("flooded")
    }
    console.log("hello", url.pathname)
    return new Response("ok")
  }
}`

describe("runtime logs of a real worker (workerd behind the edge)", () => {
  const suite = useRuntimeSuite({ timeoutMs: 3_000 })

  it("console lines and a thrown exception reach GET .../logs and a stream, work left to waitUntil included; a megabyte of printing is truncated", async () => {
    const project = await suite.newProject()
    const deployed = await suite.deploy(project.slug, project.name, [
      manifestEntry({ name: "app" }),
      { name: "worker/index.js", content: worker }
    ])
    expect(deployed.status).toBe(201)
    const path = `/v1/orgs/${project.slug}/projects/${project.name}/logs`
    const stream = await openStream(`${suite.server.url}${path}/stream`, { token: suite.admin.token })
    expect(stream.status).toBe(200)
    await stream.until((frames) => frames.some((frame) => frame.comment !== undefined))

    expect((await edgeCall(suite.edgeUrl, project.hostname, "/hello")).status).toBe(200)
    expect((await edgeCall(suite.edgeUrl, project.hostname, "/throw")).status).toBe(500)
    expect((await edgeCall(suite.edgeUrl, project.hostname, "/flood")).text).toBe("flooded")
    expect((await edgeCall(suite.edgeUrl, project.hostname, "/exact")).text).toBe("exactly")
    expect((await edgeCall(suite.edgeUrl, project.hostname, "/later")).text).toBe("soon")
    expect((await edgeCall(suite.edgeUrl, project.hostname, "/much-later")).text).toBe("in a while")

    await stream.until((frames) => frames.filter((frame) => frame.data !== undefined).length >= 6, 30_000)
    const streamed = stream.events()
    stream.close()
    const byPath = (events: ReadonlyArray<any>, pathname: string) =>
      events.find((event) => new URL(event.request.url).pathname === pathname)
    expect(byPath(streamed, "/hello")).toMatchObject({
      outcome: "ok",
      response: { status: 200 },
      logs: [{ level: "log", message: ["hello", "/hello"] }],
      truncated: false
    })
    const thrown = byPath(streamed, "/throw")
    expect(thrown).toMatchObject({
      outcome: "exception",
      logs: [{ level: "warn", message: ["about to throw", { n: 1 }] }],
      exceptions: [{ name: "RangeError", message: "out of range" }]
    })
    expect(thrown.exceptions[0].stack).toContain("index.js")
    // What ctx.waitUntil runs after the response is the invocation's: its line and its rejection are in its event.
    expect(byPath(streamed, "/later")).toMatchObject({
      outcome: "ok",
      response: { status: 200 },
      logs: [{ level: "log", message: ["after the response"] }],
      exceptions: [{ name: "TypeError", message: "late failure" }]
    })
    // Work that outlasts the second an event waits for a silent invocation's report still joins its event.
    expect(byPath(streamed, "/much-later")).toMatchObject({
      outcome: "ok",
      logs: [{ level: "log", message: ["long after the response"] }]
    })
    const flood = byPath(streamed, "/flood")
    // Part 13's bounds: the first 256 lines, each within 16 KiB, and the event says something was dropped.
    expect(flood.truncated).toBe(true)
    expect(flood.logs.map((line: any) => line.message[0])).toEqual(Array.from({ length: 256 }, (_, i) => i))
    for (const line of flood.logs) {
      expect(Buffer.byteLength(JSON.stringify(line.message))).toBeLessThanOrEqual(16 * 1024)
      expect(line.message[1]).toMatch(/^x{16000,}$/u)
    }
    // Exactly 256 lines is within the bound: all kept, nothing dropped.
    const exact = byPath(streamed, "/exact")
    expect(exact.truncated).toBe(false)
    expect(exact.logs.map((line: any) => line.message[0])).toEqual(Array.from({ length: 256 }, (_, i) => i))

    // The list holds the same events as the stream sent, newest first.
    const listed = async () => (await suite.api.get(path, { token: suite.admin.token })).body.items ?? []
    expect(await eventually(async () => (await listed()).length === 6, 10_000)).toBe(true)
    const items = await listed()
    expect([...items].sort((a: any, b: any) => a.id.localeCompare(b.id))).toEqual(
      [...streamed].sort((a: any, b: any) => a.id.localeCompare(b.id))
    )
  })
})
