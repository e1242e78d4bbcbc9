import { manifestEntry } from "@hostplane/testkit"
import * as Fs from "node:fs"
import * as Http from "node:http"
import { describe, expect, it } from "vitest"
import { descendantsNamed } from "./support/Processes.ts"
import { edgeCall, eventually, useRuntimeSuite } from "./support/RuntimeServer.ts"

/** Echoes what the worker received: its URL, method, headers and body size; a few paths exercise env and faults. */
const echoWorker = `export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    if (url.pathname === "/api/secret") return new Response(String(env.GREETING))
    if (url.pathname === "/api/asset") return env.ASSETS.fetch(new URL("/data.json", request.url))
    if (url.pathname === "/api/throw") { console.error("about to throw"); throw new TypeError("boom at " + url.pathname) }
    if (url.pathname === "/api/hang") { await new Promise((resolve) => setTimeout(resolve, 60000)); return new Response("late") }
    if (url.pathname === "/api/never") return new Promise(() => {})
    if (url.pathname === "/api/stream") {
      const { readable, writable } = new TransformStream()
      const writer = writable.getWriter()
      const encoder = new TextEncoder()
      ;(async () => {
        await writer.write(encoder.encode("first;"))
        await new Promise((resolve) => setTimeout(resolve, 1500))
        await writer.write(encoder.encode("second"))
        await writer.close()
      })()
      return new Response(readable, { headers: { "content-type": "text/plain" } })
    }
    if (url.pathname === "/api/endless") {
      const encoder = new TextEncoder()
      let timer
      const body = new ReadableStream({
        start(controller) { timer = setInterval(() => controller.enqueue(encoder.encode("tick;")), 100) },
        cancel() { clearInterval(timer) }
      })
      return new Response(body, { headers: { "content-type": "text/plain" } })
    }
    if (url.pathname === "/api/egress") {
      const results = {}
      for (const target of JSON.parse(url.searchParams.get("targets"))) {
        try {
          const response = await fetch(target, { signal: AbortSignal.timeout(5000) })
          results[target] = "status " + response.status
        } catch (error) {
          results[target] = "rejected"
        }
      }
      return Response.json(results)
    }
    let size = 0
    if (request.body !== null) for await (const chunk of request.body) size += chunk.byteLength
    console.log("served", { path: url.pathname })
    return Response.json({
      worker: "v1",
      url: request.url,
      method: request.method,
      headers: Object.fromEntries(request.headers),
      size
    }, { headers: { "x-worker": "yes", "set-cookie": "w=1; Path=/" } })
  }
}`

const bundle = (worker: string, manifest: Record<string, unknown> = {}) => [
  manifestEntry({ name: "app", ...manifest }),
  { name: "worker/index.js", content: worker },
  { name: "assets/index.html", content: "<h1>home</h1>" },
  { name: "assets/data.json", content: '{"asset":true}' }
]

describe("worker code behind the edge (real workerd)", () => {
  const suite = useRuntimeSuite({ timeoutMs: 3_000 })
  const edge = (host: string, path: string, options?: Parameters<typeof edgeCall>[3]) =>
    edgeCall(suite.edgeUrl, host, path, options)

  const deployed = async (worker = echoWorker, manifest: Record<string, unknown> = {}) => {
    const project = await suite.newProject()
    const reply = await suite.deploy(project.slug, project.name, bundle(worker, manifest))
    expect(reply.status).toBe(201)
    return project
  }

  it("assets are served first, every other path (any method) reaches the worker with the URL the client asked for", async () => {
    const { hostname } = await deployed()
    const home = await edge(hostname, "/")
    expect(home.status).toBe(200)
    expect(home.text).toBe("<h1>home</h1>")
    const api = await edge(`${hostname}:8081`, "/api/hello?x=1")
    expect(api.status).toBe(200)
    expect(api.headers["x-worker"]).toBe("yes")
    expect(api.headers["set-cookie"]).toEqual(["w=1; Path=/"])
    expect(api.json()).toMatchObject({ url: `http://${hostname}:8081/api/hello?x=1`, method: "GET" })
    const posted = await edge(hostname, "/index.html", { method: "POST", body: "hello" })
    expect(posted.json()).toMatchObject({ method: "POST", size: 5 })
  })

  it("workerFirst sends every path to the worker; env.ASSETS still serves the assets", async () => {
    const { hostname } = await deployed(echoWorker, { workerFirst: true })
    expect((await edge(hostname, "/")).json()).toMatchObject({ worker: "v1" })
    const asset = await edge(hostname, "/api/asset")
    expect(asset.status).toBe(200)
    expect(asset.json()).toEqual({ asset: true })
  })

  it("/__service/* stays the service's; /__service/auth/* reaches the worker while sign-in is not granted", async () => {
    const { hostname } = await deployed(echoWorker, { workerFirst: true })
    const health = await edge(hostname, "/__service/health")
    expect(health.json()).toEqual({ code: "ok", message: "ok" })
    const access = await edge(hostname, "/__service/access/anything")
    expect(access.status).toBe(404)
    expect(access.json().code).toBe("not_found")
    const auth = await edge(hostname, "/__service/auth/me")
    expect(auth.json()).toMatchObject({ worker: "v1", url: `http://${hostname}/__service/auth/me` })
  })

  it("strips the service's cookies and bypass header, and sets X-Forwarded-For and X-Forwarded-Proto", async () => {
    const { hostname } = await deployed()
    const reply = await edge(hostname, "/api/headers", {
      headers: {
        cookie: "__Host-service_access=pass; theirs=1; __Host-service_auth=session; __Host-service_auth_flow=f",
        "service-access-bypass": "secret",
        "x-forwarded-for": "6.6.6.6",
        "x-forwarded-proto": "https",
        "x-hostplane-invoke": '{"key":"forged"}',
        "x-custom": "kept"
      }
    })
    const headers = reply.json().headers
    expect(headers.cookie).toBe("theirs=1")
    expect(headers["service-access-bypass"]).toBeUndefined()
    expect(headers["x-hostplane-invoke"]).toBeUndefined()
    expect(headers["x-forwarded-for"]).toBe("127.0.0.1")
    expect(headers["x-forwarded-proto"]).toBe("http")
    expect(headers["x-custom"]).toBe("kept")
    expect(headers.host).toBe(hostname)
  })

  it("streams the worker's response as it comes", async () => {
    const { hostname } = await deployed()
    const url = new URL(suite.edgeUrl)
    const observed = await new Promise<{ first: string; completeAtFirst: boolean; all: string }>((resolve, reject) => {
      const request = Http.request(
        { host: url.hostname, port: url.port, path: "/api/stream", headers: { host: hostname } },
        (response) => {
          let all = ""
          let first: { first: string; completeAtFirst: boolean } | undefined
          response.on("data", (chunk: Buffer) => {
            all += chunk.toString()
            first ??= { first: chunk.toString(), completeAtFirst: response.complete }
          })
          response.on("end", () => resolve({ ...first!, all }))
        }
      )
      request.on("error", reject)
      request.end()
    })
    expect(observed.first).toBe("first;")
    expect(observed.completeAtFirst).toBe(false)
    expect(observed.all).toBe("first;second")
  })

  it("a client that leaves a streamed response cancels the worker's request, which ends as one canceled event", async () => {
    const { hostname, id } = await deployed()
    const url = new URL(suite.edgeUrl)
    await new Promise<void>((resolve, reject) => {
      const request = Http.request(
        { host: url.hostname, port: url.port, path: "/api/endless", headers: { host: hostname } },
        (response) => {
          response.once("data", () => {
            request.destroy()
            resolve()
          })
        }
      )
      request.on("error", (error) => (request.destroyed ? undefined : reject(error)))
      request.end()
    })
    // The stream never ends by itself: its invocation's event means the edge canceled the worker's request.
    const events = () =>
      suite.runtime.collector
        .recent()
        .filter((event) => event.projectId === id && event.request.url.endsWith("/api/endless"))
    expect(await eventually(async () => events().length > 0, 10_000)).toBe(true)
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(events()).toHaveLength(1)
    expect(events()[0]!.outcome).toBe("canceled")
  })

  it("a secret change reaches the running worker within 5 s without a redeploy", async () => {
    const { slug, name, hostname } = await deployed()
    const path = `/v1/orgs/${slug}/projects/${name}/secrets/GREETING`
    expect((await suite.api.put(path, { value: "one" }, { token: suite.admin.token })).status).toBe(200)
    expect(await eventually(async () => (await edge(hostname, "/api/secret")).text === "one", 5_000)).toBe(true)
    expect((await suite.api.put(path, { value: "two" }, { token: suite.admin.token })).status).toBe(200)
    expect(await eventually(async () => (await edge(hostname, "/api/secret")).text === "two", 5_000)).toBe(true)
  })

  it("a new deployment serves its code on the next request, and so does a rollback", async () => {
    const { slug, name, hostname } = await deployed()
    const first = (await edge(hostname, "/api/x")).json()
    expect(first.worker).toBe("v1")
    const v2 = await suite.deploy(slug, name, bundle(echoWorker.replace('worker: "v1"', 'worker: "v2"')))
    expect(v2.status).toBe(201)
    expect((await edge(hostname, "/api/x")).json().worker).toBe("v2")
    const list = await suite.api.get(`/v1/orgs/${slug}/projects/${name}/deployments`, { token: suite.admin.token })
    const v1 = list.body.items.find((item: { version: number }) => item.version === 1)
    const rolled = await suite.api.post(
      `/v1/orgs/${slug}/projects/${name}/rollback`,
      { deploymentId: v1.id },
      { token: suite.admin.token }
    )
    expect(rolled.status).toBe(200)
    expect((await edge(hostname, "/api/x")).json().worker).toBe("v1")
  })

  it("an uncaught exception is 500 worker_exception without the stack; its event carries the stack and the logs", async () => {
    const { hostname, id } = await deployed()
    const reply = await edge(hostname, "/api/throw")
    expect(reply.status).toBe(500)
    expect(reply.json()).toEqual({ code: "worker_exception", message: "the worker threw an exception" })
    expect(reply.text).not.toContain("boom")
    const found = await eventually(
      async () =>
        suite.runtime.collector.recent().some((event) => event.projectId === id && event.outcome === "exception"),
      5_000
    )
    expect(found).toBe(true)
    const event = suite.runtime.collector.recent().find((e) => e.projectId === id && e.outcome === "exception")!
    expect(event.exceptions[0]).toMatchObject({ name: "TypeError", message: "boom at /api/throw" })
    expect(event.exceptions[0]!.stack).toContain("index.js")
    expect(event.logs[0]).toMatchObject({ level: "error", message: ["about to throw"] })
    expect(event.request).toEqual({ method: "GET", url: `http://${hostname}/api/throw` })
  })

  it("each invocation is one event in the project's runtime logs (GET .../logs), console lines and stack included", async () => {
    const { slug, name, hostname } = await deployed()
    expect((await edge(hostname, "/api/one")).status).toBe(200)
    expect((await edge(hostname, "/api/throw")).status).toBe(500)
    const path = `/v1/orgs/${slug}/projects/${name}/logs`
    const listed = async () => (await suite.api.get(path, { token: suite.admin.token })).body.items ?? []
    expect(await eventually(async () => (await listed()).length === 2, 5_000)).toBe(true)
    const [thrown, served] = await listed()
    expect(served).toMatchObject({
      outcome: "ok",
      request: { method: "GET", url: `http://${hostname}/api/one` },
      response: { status: 200 },
      logs: [{ level: "log", message: ["served", { path: "/api/one" }] }],
      exceptions: [],
      truncated: false
    })
    expect(thrown).toMatchObject({
      outcome: "exception",
      exceptions: [{ name: "TypeError", message: "boom at /api/throw" }]
    })
    expect(thrown.exceptions[0].stack).toContain("index.js")
  })

  it("a worker that never answers is 504 worker_timeout at SERVICE_WORKER_TIMEOUT, logged as a timeout", async () => {
    const { hostname, id } = await deployed()
    const reply = await edge(hostname, "/api/hang")
    expect(reply.status).toBe(504)
    expect(reply.json().code).toBe("worker_timeout")
    expect(suite.runtime.collector.recent().some((e) => e.projectId === id && e.outcome === "timeout")).toBe(true)
  })

  it("a handler whose promise waits on nothing (workerd cancels it as hung) never answers either: 504 worker_timeout, not an exception", async () => {
    const { hostname, id } = await deployed()
    const before = suite.runtime.collector.recent().filter((e) => e.projectId === id && e.outcome === "timeout").length
    const reply = await edge(hostname, "/api/never")
    expect(reply.status).toBe(504)
    expect(reply.json().code).toBe("worker_timeout")
    const timedOut = () => suite.runtime.collector.recent().filter((e) => e.projectId === id && e.outcome === "timeout")
    expect(await eventually(async () => timedOut().length > before, 5_000)).toBe(true)
  })

  it("a worker's fetch to loopback, private or link-local addresses is rejected inside the worker", async () => {
    const { hostname } = await deployed()
    const targets = [
      suite.edgeUrl,
      suite.server.url,
      "http://10.0.0.1/",
      "http://192.168.1.1/",
      "http://169.254.169.254/latest/meta-data/",
      "http://[::1]:80/",
      "http://[fd00::1]/",
      "http://localhost:80/"
    ]
    const reply = await edge(hostname, `/api/egress?targets=${encodeURIComponent(JSON.stringify(targets))}`)
    expect(reply.status).toBe(200)
    expect(reply.json()).toEqual(Object.fromEntries(targets.map((target) => [target, "rejected"])))
  })

  it("request bodies up to 100 MiB reach the worker; a declared larger one is 413 payload_too_large", async () => {
    const { hostname } = await deployed()
    const big = Buffer.alloc(100 * 1024 * 1024, 7)
    const ok = await edge(hostname, "/api/upload", { method: "POST", body: big })
    expect(ok.status).toBe(200)
    expect(ok.json().size).toBe(big.length)
    const url = new URL(suite.edgeUrl)
    const status = await new Promise<number>((resolve, reject) => {
      const request = Http.request(
        {
          host: url.hostname,
          port: url.port,
          path: "/api/upload",
          method: "POST",
          headers: { host: hostname, "content-length": String(big.length + 1) }
        },
        (response) => {
          response.resume()
          resolve(response.statusCode!)
        }
      )
      request.on("error", reject)
      // Headers only: the edge answers from the declared length, before a byte of the body.
      request.flushHeaders()
    })
    expect(status).toBe(413)
  })

  it("runs workerd unprivileged, in a sandbox that cannot see the server's data", async () => {
    const pids = suite.runtime.pids().filter((pid): pid is number => pid !== undefined)
    expect(pids.length).toBe(2)
    const workerds = pids.flatMap(descendantsNamed("workerd"))
    expect(workerds.length).toBe(2)
    for (const pid of workerds) {
      const uid = /Uid:\s+(\d+)/.exec(Fs.readFileSync(`/proc/${pid}/status`, "utf8"))![1]
      if (process.getuid?.() === 0) expect(uid).toBe("65534")
      if (suite.runtime.sandbox.bwrap) {
        expect(Fs.existsSync(`/proc/${pid}/root${suite.server.artifactDir}`)).toBe(false)
      }
    }
  })
})
