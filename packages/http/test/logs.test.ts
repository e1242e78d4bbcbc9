import { Jobs, Kernel, Logs, Projects } from "@hostplane/core"
import { Duration, Effect, Option } from "effect"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { openStream } from "./support/EventStream.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { type TestServer, useSuite } from "./support/TestServer.ts"

const input = (projectId: string, overrides: Partial<Logs.LogEventInput> = {}): Logs.LogEventInput => ({
  projectId,
  deploymentId: "dep_one",
  timestamp: new Date().toISOString(),
  outcome: "ok",
  request: { method: "GET", url: "http://site.apps.localhost/api/hello" },
  response: { status: 200 },
  durationMs: 4,
  logs: [],
  exceptions: [],
  ...overrides
})

const record = (server: TestServer, inputs: ReadonlyArray<Logs.LogEventInput>) =>
  server.run(Effect.flatMap(Logs.RuntimeLogs, (logs) => logs.recordAll(inputs)))

const nodeToken = "node-secret-token"

const ago = (ms: number) => new Date(Date.now() - ms).toISOString()

describe.each(backends)("decisions part 13 runtime logs (%s)", (_name, stores) => {
  const suite = useSuite(stores, {
    logs: { retention: { maxAge: Duration.hours(24), maxEvents: 6 }, heartbeat: Duration.millis(300) },
    node: { token: nodeToken }
  })
  const { api, newOrg, newProject, withRole } = suite
  const path = (slug: string, project: string, rest = "") => `/v1/orgs/${slug}/projects/${project}/logs${rest}`
  const fresh = async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    return { slug, project, member: await withRole(slug, "member") }
  }

  it("an event is listed in part 13's shape exactly: console lines, exceptions with their stack, truncated false", async () => {
    const { slug, project, member } = await fresh()
    const started = new Date(Date.now() - 5).toISOString()
    expect(
      await record(suite.server, [
        input(project.id, {
          timestamp: Date.parse(started),
          outcome: "exception",
          request: { method: "POST", url: "http://site.apps.localhost/api/fail?x=1" },
          response: null,
          durationMs: 12.6,
          logs: [
            { level: "log", message: ["hello", 42, { user_id: 7 }], timestamp: Date.parse(started) + 1 },
            { level: "trace", message: ["an unknown level is log"], timestamp: started }
          ],
          exceptions: [{ name: "Error", message: "boom", stack: "Error: boom\n    at fetch (index.js:3:11)" }]
        })
      ])
    ).toBe(1)
    const reply = await api.get(path(slug, project.name), { token: member.token })
    expect(reply.status).toBe(200)
    expect(reply.body.nextCursor).toBeNull()
    const [event] = reply.body.items
    expect(Object.keys(event).sort()).toEqual(
      [
        "id",
        "deploymentId",
        "timestamp",
        "outcome",
        "request",
        "response",
        "durationMs",
        "logs",
        "exceptions",
        "truncated"
      ].sort()
    )
    expect(event).toEqual({
      id: expect.stringMatching(/^log_[a-z0-9]+$/),
      deploymentId: "dep_one",
      timestamp: started,
      outcome: "exception",
      request: { method: "POST", url: "http://site.apps.localhost/api/fail?x=1" },
      response: null,
      durationMs: 13,
      logs: [
        {
          level: "log",
          message: ["hello", 42, { user_id: 7 }],
          timestamp: new Date(Date.parse(started) + 1).toISOString()
        },
        { level: "log", message: ["an unknown level is log"], timestamp: started }
      ],
      exceptions: [{ name: "Error", message: "boom", stack: "Error: boom\n    at fetch (index.js:3:11)" }],
      truncated: false
    })
  })

  it("at most 256 log lines of 16 KiB each per event; a megabyte of printing is cut and truncated is true", async () => {
    const { slug, project, member } = await fresh()
    const megabyte = "x".repeat(1024 * 1024)
    await record(suite.server, [
      input(project.id, {
        logs: Array.from({ length: 300 }, (_, index) => ({
          level: "info",
          message: index === 0 ? ["big", megabyte, "dropped"] : [`line ${index}`],
          timestamp: Date.now()
        }))
      }),
      input(project.id, { logs: [{ level: "warn", message: ["é".repeat(8192)], timestamp: Date.now() }] })
    ])
    const reply = await api.get(path(slug, project.name), { token: member.token })
    const [exact, cut] = reply.body.items.sort((a: any, b: any) => a.logs.length - b.logs.length)
    // 8,192 two-byte characters are 16 KiB of text plus two quotes and brackets: over the line limit, cut.
    expect(exact.truncated).toBe(true)
    expect(Buffer.byteLength(JSON.stringify(exact.logs[0].message))).toBeLessThanOrEqual(16 * 1024)
    expect(exact.logs[0].message[0]).toMatch(/^é+$/)
    expect(cut.truncated).toBe(true)
    expect(cut.logs).toHaveLength(256)
    expect(cut.logs[255].message).toEqual(["line 255"])
    const first = cut.logs[0].message
    expect(first[0]).toBe("big")
    expect(first).toHaveLength(2)
    expect(Buffer.byteLength(JSON.stringify(first))).toBeLessThanOrEqual(16 * 1024)
    expect(Buffer.byteLength(JSON.stringify(first))).toBeGreaterThan(16 * 1024 - 16)
    const small = await record(suite.server, [
      input(project.id, { logs: [{ level: "log", message: ["ok"], timestamp: 0 }] })
    ])
    expect(small).toBe(1)
    const listed = await api.get(path(slug, project.name, "?limit=1"), { token: member.token })
    expect(listed.body.items[0].truncated).toBe(false)
  })

  it("newest first by timestamp; limit and cursor page through; deployment and outcome filter", async () => {
    const { slug, project, member } = await fresh()
    await record(suite.server, [
      input(project.id, { timestamp: ago(5000), deploymentId: "dep_a" }),
      input(project.id, { timestamp: ago(1000), deploymentId: "dep_b", outcome: "timeout", response: null }),
      input(project.id, { timestamp: ago(3000), deploymentId: "dep_a", outcome: "canceled", response: null }),
      input(project.id, { timestamp: ago(2000), deploymentId: "dep_b" }),
      input(project.id, {
        timestamp: ago(4000),
        deploymentId: "dep_a",
        outcome: "exception",
        response: { status: 500 }
      })
    ])
    const all = (await api.get(path(slug, project.name), { token: member.token })).body.items
    expect(all.map((event: any) => event.timestamp)).toEqual(
      [...all.map((event: any) => event.timestamp)].sort().reverse()
    )
    expect(all).toHaveLength(5)
    const first = await api.get(path(slug, project.name, "?limit=2"), { token: member.token })
    expect(first.body.items).toEqual(all.slice(0, 2))
    expect(first.body.nextCursor).toEqual(expect.any(String))
    const second = await api.get(path(slug, project.name, `?limit=2&cursor=${first.body.nextCursor}`), {
      token: member.token
    })
    expect(second.body.items).toEqual(all.slice(2, 4))
    const third = await api.get(path(slug, project.name, `?limit=2&cursor=${second.body.nextCursor}`), {
      token: member.token
    })
    expect(third.body).toEqual({ items: all.slice(4), nextCursor: null })
    const byDeployment = await api.get(path(slug, project.name, "?deployment=dep_b"), { token: member.token })
    expect(byDeployment.body.items.map((event: any) => event.deploymentId)).toEqual(["dep_b", "dep_b"])
    const timeouts = await api.get(path(slug, project.name, "?outcome=timeout"), { token: member.token })
    expect(timeouts.body.items.map((event: any) => event.outcome)).toEqual(["timeout"])
    const none = await api.get(path(slug, project.name, "?outcome=canceled&deployment=dep_b"), { token: member.token })
    expect(none.body).toEqual({ items: [], nextCursor: null })
  })

  it("a bad cursor, limit or outcome is 400 bad_request; a cursor of another list too", async () => {
    const { slug, project, member } = await fresh()
    const notifications = Buffer.from(JSON.stringify([new Date().toISOString(), "ntf_abc"])).toString("base64url")
    for (const query of [
      "cursor=nonsense",
      `cursor=${notifications}`,
      "limit=0",
      "limit=201",
      "limit=x",
      "outcome=fine"
    ]) {
      const reply = await api.get(path(slug, project.name, `?${query}`), { token: member.token })
      expect({ query, status: reply.status, code: reply.body.code }).toEqual({
        query,
        status: 400,
        code: "bad_request"
      })
    }
    for (const query of ["outcome=fine", "", "lastEventId"]) {
      const stream = await openStream(`${suite.server.url}${path(slug, project.name, `/stream?${query}`)}`, {
        token: member.token,
        ...(query === "lastEventId" ? { lastEventId: "not an id" } : {})
      })
      if (query === "") {
        expect(stream.status).toBe(200)
        stream.close()
        continue
      }
      expect({ query, status: stream.status, code: (await stream.body()).code }).toEqual({
        query,
        status: 400,
        code: "bad_request"
      })
    }
  })

  it("an unknown project, or one of another org, is 404 not_found on both routes", async () => {
    const { slug, member } = await fresh()
    const other = await fresh()
    await record(suite.server, [input(other.project.id)])
    for (const name of ["no-such-project", other.project.name]) {
      const list = await api.get(path(slug, name), { token: suite.admin.token })
      expect({ status: list.status, code: list.body.code }).toEqual({ status: 404, code: "not_found" })
      const stream = await openStream(`${suite.server.url}${path(slug, name, "/stream")}`, { token: member.token })
      expect({ status: stream.status, code: (await stream.body()).code }).toEqual({ status: 404, code: "not_found" })
    }
  })

  describe("roles", () => {
    const setup = async (slug: string) => (await newProject(slug)).name
    itChecksRoles(suite, {
      name: "GET logs",
      min: "member",
      setup,
      request: (slug, name) => ({ method: "GET", path: path(slug, name) }),
      ok: 200
    })
    itChecksRoles(suite, {
      name: "GET logs/stream",
      min: "member",
      setup,
      request: (slug, name) => async (token) => {
        const stream = await openStream(`${suite.server.url}${path(slug, name, "/stream")}`, { token })
        const body = await stream.body()
        stream.close()
        return { status: stream.status, headers: stream.headers, body }
      },
      ok: 200
    })
  })

  it("the stream sends each new event as id and data, comments while idle, and resumes after Last-Event-ID", async () => {
    const { slug, project, member } = await fresh()
    await record(suite.server, [input(project.id, { logs: [{ level: "log", message: ["before"], timestamp: 0 }] })])
    const url = `${suite.server.url}${path(slug, project.name, "/stream")}`
    const first = await openStream(url, { token: member.token })
    expect(first.status).toBe(200)
    expect(first.headers.get("content-type")).toMatch(/^text\/event-stream/)
    expect(first.headers.get("x-request-id")).toEqual(expect.any(String))
    // An idle stream still sends comment lines (every 300 ms in this suite, 15 s by default).
    await first.until((frames) => frames.filter((frame) => frame.comment !== undefined).length >= 2)
    expect(first.events()).toEqual([])
    await record(suite.server, [input(project.id, { logs: [{ level: "log", message: ["one"], timestamp: 0 }] })])
    await record(suite.server, [
      input(project.id, { outcome: "exception", exceptions: [{ name: "Error", message: "two", stack: "Error: two" }] })
    ])
    await first.until((frames) => frames.filter((frame) => frame.data !== undefined).length >= 2)
    const [one, two] = first.events()
    expect(one.logs[0].message).toEqual(["one"])
    expect(two.exceptions[0].message).toBe("two")
    // Two events of the same millisecond list in id order, not arrival order: find the second among the newest two.
    const newest = (await api.get(path(slug, project.name, "?limit=2"), { token: member.token })).body.items
    expect(two).toEqual(newest.find((item: { id: string }) => item.id === two.id))
    const frames = first.frames.filter((frame) => frame.data !== undefined)
    expect(frames.map((frame) => frame.id)).toEqual([one.id, two.id])
    first.close()
    // Recorded while nobody follows; a reconnect naming the first event gets the second and these, then new ones.
    await record(suite.server, [
      input(project.id, { logs: [{ level: "log", message: ["three"], timestamp: 0 }] }),
      input(project.id, { logs: [{ level: "log", message: ["four"], timestamp: 0 }] })
    ])
    const resumed = await openStream(url, { token: member.token, lastEventId: one.id })
    await resumed.until((frames) => frames.filter((frame) => frame.data !== undefined).length >= 3)
    await record(suite.server, [input(project.id, { logs: [{ level: "log", message: ["five"], timestamp: 0 }] })])
    await resumed.until((frames) => frames.filter((frame) => frame.data !== undefined).length >= 4)
    expect(resumed.events().map((event) => event.logs[0]?.message[0] ?? event.exceptions[0].message)).toEqual([
      "two",
      "three",
      "four",
      "five"
    ])
    resumed.close()
    // An id no longer kept (or never this project's) resumes with new events only.
    const gone = await openStream(url, { token: member.token, lastEventId: "log_nosuchevent" })
    await gone.until((frames) => frames.some((frame) => frame.comment !== undefined))
    await record(suite.server, [input(project.id, { logs: [{ level: "log", message: ["six"], timestamp: 0 }] })])
    await gone.until((frames) => frames.some((frame) => frame.data !== undefined))
    expect(gone.events().map((event) => event.logs[0].message[0])).toEqual(["six"])
    gone.close()
  })

  it("a stream sends only its project's events, filtered by outcome and deployment", async () => {
    const { slug, project, member } = await fresh()
    const other = await fresh()
    const stream = await openStream(`${suite.server.url}${path(slug, project.name, "/stream?outcome=exception")}`, {
      token: member.token
    })
    await stream.until((frames) => frames.some((frame) => frame.comment !== undefined))
    await record(suite.server, [
      input(other.project.id, { outcome: "exception" }),
      input(project.id, { outcome: "ok" }),
      input(project.id, { outcome: "exception", deploymentId: "dep_wanted" })
    ])
    await stream.until((frames) => frames.some((frame) => frame.data !== undefined))
    // Wait for two more heartbeats: anything else recorded above would have arrived by then.
    const seen = stream.frames.length
    await stream.until((frames) => frames.length >= seen + 2)
    expect(stream.events().map((event) => event.deploymentId)).toEqual(["dep_wanted"])
    stream.close()
  })

  it("events older than the retention window are not listed; the worker_log_purge job keeps the newest per project", async () => {
    const { slug, project, member } = await fresh()
    const busy = await newProject(slug)
    await record(suite.server, [
      input(project.id, { timestamp: ago(25 * 3_600_000) }),
      input(project.id, { timestamp: ago(1000) })
    ])
    // This suite keeps 6 events per project.
    await record(
      suite.server,
      Array.from({ length: 9 }, (_, index) => input(busy.id, { timestamp: ago(60_000 - index), durationMs: index }))
    )
    const list = async (name: string) =>
      (await api.get(path(slug, name), { token: member.token })).body.items.map((event: any) => event.durationMs)
    expect(await list(project.name)).toHaveLength(1)
    expect(await list(busy.name)).toEqual([8, 7, 6, 5, 4, 3, 2, 1, 0])
    // The job the server's runner runs every minute (one always exists), run here once.
    expect(await suite.server.run(Jobs.JobRunner.runOnce([Logs.logPurgeHandler]))).toBe(1)
    expect(await list(busy.name)).toEqual([8, 7, 6, 5, 4, 3])
    expect(await list(project.name)).toHaveLength(1)
    // The aged event is gone from the store too, not only hidden.
    const stored = await suite.server.run(
      Effect.flatMap(Logs.LogStore, (store) => store.list(project.id, { limit: 10, since: ago(48 * 3_600_000) }))
    )
    expect(stored).toHaveLength(1)
  })

  it("a deleted project's events go with it", async () => {
    const { slug, project } = await fresh()
    await record(suite.server, [input(project.id), input(project.id)])
    const [kept] = (await api.get(path(slug, project.name), { token: suite.admin.token })).body.items
    const started = await api.delete(
      `/v1/orgs/${slug}/projects/${project.name}`,
      { confirm: project.name },
      { token: suite.admin.token }
    )
    expect(started.status).toBe(202)
    await suite.server.run(Jobs.JobRunner.runOnce([Projects.projectDeleteHandler]))
    expect((await api.get(path(slug, project.name), { token: suite.admin.token })).status).toBe(404)
    const left = await suite.server.run(
      Effect.gen(function* () {
        const store = yield* Logs.LogStore
        return {
          listed: (yield* store.list(project.id, { limit: 10, since: ago(3_600_000) })).length,
          after: Option.isSome(yield* store.after(project.id, Kernel.makeId("log", kept.id), 10))
        }
      })
    )
    expect(left).toEqual({ listed: 0, after: false })
    // A late event of the deleted project is dropped, never an error.
    expect(await record(suite.server, [input(project.id)])).toBe(0)
  })

  describe("POST /v1/node/logs", () => {
    /** `null` sends no token at all. */
    const report = (body: unknown, token: string | null = nodeToken) =>
      api.post("/v1/node/logs", body, token === null ? {} : { token })

    it("the node token records events (202 { accepted }), drops unknown projects' and applies the limits", async () => {
      const { slug, project, member } = await fresh()
      const reply = await report({
        events: [
          input(project.id, { logs: [{ level: "log", message: ["a".repeat(20_000)], timestamp: Date.now() }] }),
          input("prj_nosuchproject")
        ]
      })
      expect(reply).toMatchObject({ status: 202, body: { accepted: 1 } })
      const [event] = (await api.get(path(slug, project.name), { token: member.token })).body.items
      expect(event.truncated).toBe(true)
      expect(Buffer.byteLength(JSON.stringify(event.logs[0].message))).toBeLessThanOrEqual(16 * 1024)
    })

    it("no token or a wrong one is 401; a session token is not a node token", async () => {
      const { project } = await fresh()
      for (const token of [null, "wrong", suite.admin.token]) {
        const reply = await report({ events: [input(project.id)] }, token)
        expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 401, code: "unauthorized" })
      }
    })

    it("an empty or oversized batch, or an event missing a field or with an unknown outcome, is 400", async () => {
      const { project } = await fresh()
      const { outcome: _, ...noOutcome } = input(project.id)
      for (const events of [
        [],
        Array.from({ length: 101 }, () => input(project.id)),
        [noOutcome],
        [{ ...input(project.id), outcome: "fine" }]
      ]) {
        const reply = await report({ events })
        expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 400, code: "bad_request" })
      }
      const big = await report({
        events: [input(project.id, { logs: [{ level: "log", message: ["x".repeat(2 ** 20)], timestamp: 0 }] })]
      })
      expect({ status: big.status, code: big.body.code }).toEqual({ status: 413, code: "payload_too_large" })
    })
  })
})
