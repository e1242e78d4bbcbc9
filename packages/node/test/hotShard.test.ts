import { MailTransportOutboxDir } from "@hostplane/adapters-providers"
import { manifestEntry } from "@hostplane/testkit"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it, vi } from "vitest"
import { bindingsBundle, callBinding, envOf } from "./support/BindingsWorker.ts"
import { edgeCall, eventually, laterRoute, useRuntimeSuite } from "./support/RuntimeServer.ts"

/**
 * Names its isolate (a random id made on its first request), so a test can tell the hot shard's worker from the
 * loader shard's; prints, throws, spins, reads its secret and asset, and tries egress by path.
 */
const worker = (version: string) => `let isolate
export default {
  async fetch(request, env, ctx) {
    // Randomness is refused at a module's top level: made on the first request instead.
    isolate ??= crypto.randomUUID()
    const url = new URL(request.url)
    if (url.pathname === "/loop") { for (;;) {} }
    if (url.pathname === "/hang") return new Promise(() => {})
    if (url.pathname === "/throw") { console.warn("about to throw"); throw new RangeError("out of range") }
    ${laterRoute}
    if (url.pathname === "/asset") return env.ASSETS.fetch(new URL("/hello.txt", request.url))
    if (url.pathname === "/egress") {
      const results = {}
      for (const target of JSON.parse(url.searchParams.get("targets"))) {
        try {
          const response = await fetch(target, { signal: AbortSignal.timeout(5000) })
          results[target] = "status " + response.status
        } catch {
          results[target] = "rejected"
        }
      }
      return Response.json(results)
    }
    console.log("served", url.pathname)
    return Response.json({
      version: ${JSON.stringify(version)},
      isolate,
      secret: env.GREETING ?? null,
      url: request.url,
      headers: Object.fromEntries(request.headers),
      cf: request.cf === undefined ? "none" : request.cf,
      cfOfClone: request.clone().cf ?? "none",
      cfOfCopyOfClone: new Request(request.clone()).cf ?? "none",
      cfOfInit: new Request(request.url, request).cf ?? "none",
      cfOfOwn: new Request(request.clone(), { cf: { cacheTtl: 5 } }).cf ?? "none",
      cfOfCopy: new Request(request).cf ?? "none",
      copyIsRequest: new Request(request.clone()) instanceof Request && request instanceof Request,
      waitUntilOwn: Object.hasOwn(ctx, "waitUntil")
    })
  }
}`

const bundle = (version: string) => [
  manifestEntry({ name: "app" }),
  { name: "worker/index.js", content: worker(version) },
  { name: "assets/hello.txt", content: "hello asset" }
]

describe("hot projects: a static-config workerd serving the busiest projects' workers directly", () => {
  const timeoutMs = 3_000
  // A low promotion rate, so a few parallel requests make a project hot; one loader shard.
  const suite = useRuntimeSuite({ timeoutMs, shards: 1, hot: { max: 2, promoteRate: 5 } })
  // A promotion takes two seconds of traffic and a process start, on a machine shared with other test runs.
  vi.setConfig({ testTimeout: 120_000 })

  const call = (hostname: string, path = "/") => edgeCall(suite.edgeUrl, hostname, path)

  /** Requests the project, four at a time, until it is served by the hot shard; answers the hot worker's isolate. */
  const promote = async (project: { readonly id: string; readonly hostname: string }) => {
    let running = true
    const load = Array.from({ length: 4 }, async () => {
      while (running) await call(project.hostname).catch(() => undefined)
    })
    const promoted = await eventually(async () => suite.runtime.hot().projects.includes(project.id), 30_000)
    running = false
    await Promise.all(load)
    expect(promoted).toBe(true)
  }

  /** Runs requests four at a time while `during` runs; answers every failure (status and text), and how many. */
  const underLoad = async (hostname: string, during: () => Promise<void>, accept: (text: string) => boolean) => {
    let running = true
    const failures: Array<string> = []
    let served = 0
    const load = Array.from({ length: 4 }, async () => {
      while (running) {
        const reply = await call(hostname).catch((error: unknown) => ({ status: 0, text: String(error) }))
        if (reply.status === 200 && accept(reply.text)) served += 1
        else failures.push(`${reply.status} ${reply.text.slice(0, 200)}`)
      }
    })
    try {
      await during()
    } finally {
      running = false
      await Promise.all(load)
    }
    return { failures, served }
  }

  const secretPath = (project: { readonly slug: string; readonly name: string }) =>
    `/v1/orgs/${project.slug}/projects/${project.name}/secrets/GREETING`

  it("a project with sustained traffic is promoted: its worker runs in the hot process with the same env, url, headers and no request.cf", async () => {
    const project = await suite.newProject()
    expect((await suite.deploy(project.slug, project.name, bundle("v1"))).status).toBe(201)
    expect((await suite.api.put(secretPath(project), { value: "hi" }, { token: suite.admin.token })).status).toBe(200)
    const cold = (await call(project.hostname, "/x?y=1")).json()
    expect(cold.secret).toBe("hi")
    expect(suite.runtime.hot().projects).not.toContain(project.id)

    await promote(project)
    const hot = (await call(project.hostname, "/x?y=1")).json()
    // Another isolate than the loader shard's: the request reached the hot process.
    expect(hot.isolate).not.toBe(cold.isolate)
    expect(hot).toMatchObject({ version: "v1", secret: "hi", url: cold.url })
    expect(hot.headers.host).toBe(project.hostname)
    expect(hot.headers["x-forwarded-for"]).toBe("127.0.0.1")
    // The node's own headers reach the entry module only: the worker never sees them.
    expect(Object.keys(hot.headers).filter((name) => name.startsWith("x-hostplane-"))).toEqual([])
    // Nor the node's invocation fields, which reach the entry module in request.cf on either shard: the worker sees no
    // request.cf, nor does any copy of its request (as a request it builds itself), unless it gives the copy a cf.
    for (const seen of [cold, hot]) {
      expect(seen).toMatchObject({
        cf: "none",
        cfOfClone: "none",
        cfOfCopyOfClone: "none",
        cfOfInit: "none",
        cfOfOwn: { cacheTtl: 5 },
        cfOfCopy: "none",
        copyIsRequest: true,
        // ctx.waitUntil is the context's prototype's, as workerd has it: the entry module's hold on it sets nothing on
        // the context.
        waitUntilOwn: false
      })
    }
    expect((await call(project.hostname, "/asset")).text).toBe("hello asset")
    // The same isolate answers again: the project stays hot.
    expect((await call(project.hostname)).json().isolate).toBe(hot.isolate)
  })

  it("logs from the hot process: one event per invocation with its lines, work left to ctx.waitUntil included; an exception is 500 worker_exception, a hung handler 504", async () => {
    const project = await suite.newProject()
    expect((await suite.deploy(project.slug, project.name, bundle("v1"))).status).toBe(201)
    await promote(project)
    const marker = `/marked-${Date.now()}`
    expect((await call(project.hostname, marker)).status).toBe(200)
    expect((await call(project.hostname, "/later")).text).toBe("soon")
    const thrown = await call(project.hostname, "/throw")
    expect(thrown.status).toBe(500)
    expect(thrown.json()).toEqual({ code: "worker_exception", message: "the worker threw an exception" })
    // A handler that waits on nothing is cancelled by workerd, whose own 500 the edge answers as the loader shard's
    // hung outcome.
    const hung = await call(project.hostname, "/hang")
    expect(hung.status).toBe(504)
    expect(hung.json().code).toBe("worker_timeout")
    expect(suite.runtime.hot().projects).toContain(project.id)

    const path = `/v1/orgs/${project.slug}/projects/${project.name}/logs`
    const events = async () =>
      ((await suite.api.get(path, { token: suite.admin.token })).body.items ?? []).filter((event: any) =>
        ["/throw", "/later", marker].includes(new URL(event.request.url).pathname)
      )
    expect(await eventually(async () => (await events()).length === 3, 10_000)).toBe(true)
    const byPath = (items: ReadonlyArray<any>, pathname: string) =>
      items.filter((event) => new URL(event.request.url).pathname === pathname)
    const items = await events()
    expect(byPath(items, marker)).toHaveLength(1)
    expect(byPath(items, marker)[0]).toMatchObject({
      outcome: "ok",
      response: { status: 200 },
      logs: [{ level: "log", message: ["served", marker] }]
    })
    // What ctx.waitUntil ran after the response is the invocation's: its line and its rejection are in its event.
    expect(byPath(items, "/later")).toHaveLength(1)
    expect(byPath(items, "/later")[0]).toMatchObject({
      outcome: "ok",
      response: { status: 200 },
      logs: [{ level: "log", message: ["after the response"] }],
      exceptions: [{ name: "TypeError", message: "late failure" }]
    })
    expect(byPath(items, "/throw")).toHaveLength(1)
    expect(byPath(items, "/throw")[0]).toMatchObject({
      outcome: "exception",
      logs: [{ level: "warn", message: ["about to throw"] }],
      exceptions: [{ name: "RangeError", message: "out of range" }]
    })
  })

  it("deploys, a rollback and a secret change of a hot project are served at once, with no failed request under load, and reach the hot process", async () => {
    const project = await suite.newProject()
    expect((await suite.deploy(project.slug, project.name, bundle("v1"))).status).toBe(201)
    await promote(project)
    const buildsBefore = suite.runtime.hot().builds
    let expected = "v1"
    let secret: string | null = null
    const { failures, served } = await underLoad(
      project.hostname,
      async () => {
        for (const version of ["v2", "v3"]) {
          expect((await suite.deploy(project.slug, project.name, bundle(version))).status).toBe(201)
          expected = version
          // The first request after the deploy's 201 runs the new code (the loader shard, while the hot one builds).
          expect((await call(project.hostname)).json().version).toBe(version)
        }
        const list = await suite.api.get(`/v1/orgs/${project.slug}/projects/${project.name}/deployments`, {
          token: suite.admin.token
        })
        const v1 = list.body.items.find((item: { version: number }) => item.version === 1)
        const rolled = await suite.api.post(
          `/v1/orgs/${project.slug}/projects/${project.name}/rollback`,
          { deploymentId: v1.id },
          { token: suite.admin.token }
        )
        expect(rolled.status).toBe(200)
        expected = "v1"
        expect((await call(project.hostname)).json().version).toBe("v1")
        expect((await suite.api.put(secretPath(project), { value: "new" }, { token: suite.admin.token })).status).toBe(
          200
        )
        expect(await eventually(async () => (await call(project.hostname)).json().secret === "new", 5_000)).toBe(true)
        secret = "new"
        // A new hot process runs the rolled-back code with the new secret.
        expect(
          await eventually(async () => {
            const answer = (await call(project.hostname)).json()
            return suite.runtime.hot().builds > buildsBefore && answer.version === "v1" && answer.secret === "new"
          }, 30_000)
        ).toBe(true)
      },
      // Requests in flight at a change may be answered by either side of it; never by an error.
      (text) => {
        const answer = JSON.parse(text)
        return ["v1", "v2", "v3"].includes(answer.version) && (secret === null || answer.secret !== undefined)
      }
    )
    expect(failures).toEqual([])
    expect(served).toBeGreaterThan(0)
    expect(expected).toBe("v1")
    expect(suite.runtime.hot().projects).toContain(project.id)
  })

  it("a worker on the hot shard cannot reach loopback, private or link-local addresses", async () => {
    const project = await suite.newProject()
    expect((await suite.deploy(project.slug, project.name, bundle("v1"))).status).toBe(201)
    await promote(project)
    const targets = [
      suite.edgeUrl,
      suite.server.url,
      "http://10.0.0.1/",
      "http://192.168.1.1/",
      "http://169.254.169.254/latest/meta-data/",
      "http://[::1]:80/",
      "http://localhost:80/"
    ]
    const reply = await call(project.hostname, `/egress?targets=${encodeURIComponent(JSON.stringify(targets))}`)
    expect(reply.status).toBe(200)
    expect(reply.json()).toEqual(Object.fromEntries(targets.map((target) => [target, "rejected"])))
    expect(suite.runtime.hot().projects).toContain(project.id)
  })

  it("the hot process killed with SIGKILL: requests go to the loader shard, and a new hot process is built", async () => {
    const project = await suite.newProject()
    expect((await suite.deploy(project.slug, project.name, bundle("v1"))).status).toBe(201)
    await promote(project)
    const pid = suite.runtime.hot().pid!
    const hotIsolate = (await call(project.hostname)).json().isolate
    process.kill(pid, "SIGKILL")
    // The next request is answered, by another isolate.
    expect(await eventually(async () => suite.runtime.hot().pid !== pid, 10_000)).toBe(true)
    const after = await call(project.hostname)
    expect(after.status).toBe(200)
    expect(after.json().isolate).not.toBe(hotIsolate)
    await promote(project)
    expect(suite.runtime.hot().pid).not.toBe(pid)
    expect((await call(project.hostname)).json().version).toBe("v1")
  })

  it("a busy loop in a hot worker is 504 worker_timeout; other requests go to the loader shard meanwhile, and the hot process is rebuilt", async () => {
    const project = await suite.newProject()
    expect((await suite.deploy(project.slug, project.name, bundle("v1"))).status).toBe(201)
    await promote(project)
    const pid = suite.runtime.hot().pid!
    const looped = call(project.hostname, "/loop")
    // The hung process is taken out of service: requests are answered (by the loader shard) before the loop's 504.
    expect(await eventually(async () => !suite.runtime.hot().projects.includes(project.id), 10_000)).toBe(true)
    const meanwhile = await call(project.hostname)
    expect(meanwhile.status).toBe(200)
    const timedOut = await looped
    expect(timedOut.status).toBe(504)
    expect(timedOut.json().code).toBe("worker_timeout")
    await promote(project)
    expect(suite.runtime.hot().pid).not.toBe(pid)
  })
})

describe("an add-on binding on the hot shard (env.email through the node's relay)", () => {
  const mailDomain = "mail.example.test"
  const outbox = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-hot-outbox-"))
  afterAll(() => Fs.rmSync(outbox, { recursive: true, force: true }))
  const suite = useRuntimeSuite(
    { timeoutMs: 20_000, shards: 1, hot: { max: 2, promoteRate: 5 } },
    { mail: { mailDomain }, node: { token: "node-token-hot-mail" } },
    { providers: [() => MailTransportOutboxDir.layer(outbox)] }
  )
  vi.setConfig({ testTimeout: 120_000 })

  it("a hot worker's env.email sends as its project's address; the grant's settings reach it through the environment", async () => {
    const project = await suite.newProject()
    expect((await suite.deploy(project.slug, project.name, bindingsBundle())).status).toBe(201)
    const base = `/v1/orgs/${project.slug}/projects/${project.name}/email`
    const grant = await suite.api.post(base, undefined, { token: suite.admin.token })
    expect(grant.status).toBe(200)
    expect(
      await eventually(async () => (await envOf(suite.edgeUrl, project.hostname)).keys.includes("email"), 5_000)
    ).toBe(true)
    let running = true
    const load = Array.from({ length: 4 }, async () => {
      while (running) await edgeCall(suite.edgeUrl, project.hostname, "/env").catch(() => undefined)
    })
    const promoted = await eventually(async () => suite.runtime.hot().projects.includes(project.id), 30_000)
    running = false
    await Promise.all(load)
    expect(promoted).toBe(true)

    expect((await envOf(suite.edgeUrl, project.hostname)).keys).toContain("email")
    const sent = await callBinding(suite.edgeUrl, project.hostname, "email", "send", [
      { to: "zoe@example.com", subject: "hot", text: "Hello from the hot shard." }
    ])
    expect(sent.value).toEqual({ id: expect.stringMatching(/^mail_/), messageId: expect.any(String) })
    const log = await suite.api.get(`${base}/log`, { token: suite.admin.token })
    expect(log.body.items[0]).toMatchObject({ id: sent.value.id, direction: "out", to: "zoe@example.com" })
    // Still the hot process: the call did not change the project's key.
    expect(suite.runtime.hot().projects).toContain(project.id)
  })
})
