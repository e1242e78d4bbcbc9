import { bundleOf, manifestEntry } from "@hostplane/testkit"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import * as Http from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { descendantsNamed } from "../../node/test/support/Processes.ts"
import { freePort, type ServerProcess, signIn, startServer, stopServer } from "./support/ServerProcess.ts"

/** One call to the edge with `host`; the body read whole. */
const edge = (
  port: number,
  host: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: Buffer } = {}
) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const request = Http.request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: options.method ?? "GET",
        headers: { host, ...options.headers }
      },
      (response) => {
        let text = ""
        response.on("data", (chunk) => (text += chunk))
        response.on("end", () => resolve({ status: response.statusCode!, text }))
      }
    )
    request.on("error", reject)
    request.end(options.body)
  })

/**
 * Streams `bytes` of zeros to the edge without a Content-Length (chunked), so the edge can only count what arrives;
 * answers the status and body it sent back. Writes after the answer may fail (the edge closes): that is the point.
 */
const streamBody = (port: number, host: string, path: string, bytes: number) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    let answered = false
    const request = Http.request(
      { host: "127.0.0.1", port, path, method: "POST", headers: { host, "transfer-encoding": "chunked" } },
      (response) => {
        answered = true
        let text = ""
        response.on("data", (chunk) => (text += chunk))
        response.on("end", () => {
          request.destroy()
          resolve({ status: response.statusCode!, text })
        })
      }
    )
    request.on("error", (error) => {
      if (!answered) reject(error)
    })
    const chunk = Buffer.alloc(1024 * 1024)
    let sent = 0
    const pump = () => {
      while (sent < bytes && !answered) {
        const size = Math.min(chunk.length, bytes - sent)
        sent += size
        if (!request.write(size === chunk.length ? chunk : chunk.subarray(0, size)))
          return void request.once("drain", pump)
      }
      if (!answered) request.end()
    }
    pump()
  })

const until = async <A>(what: string, probe: () => Promise<A | undefined>, waitMs = 60_000): Promise<A> => {
  const deadline = Date.now() + waitMs
  for (;;) {
    const value = await probe().catch(() => undefined)
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

const worker = `
let release
const gate = new Promise((resolve) => (release = resolve))
export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    const path = url.pathname
    if (path === "/bindings") return Response.json({ storage: typeof env.storage, email: typeof env.email })
    if (path === "/egress") {
      const targets = JSON.parse(url.searchParams.get("targets"))
      const results = {}
      for (const target of targets) {
        results[target] = await fetch(target, { signal: AbortSignal.timeout(10000) }).then(
          (reply) => "reached " + reply.status,
          (error) => (error.name === "TimeoutError" ? "no answer" : "rejected")
        )
      }
      return Response.json(results)
    }
    if (path === "/print") {
      const line = "x".repeat(64 * 1024)
      for (let i = 0; i < 100; i++) console.log(line)
      return new Response("printed")
    }
    if (path === "/put") {
      try {
        const stored = await env.storage.put(url.searchParams.get("key"), new Uint8Array(Number(url.searchParams.get("size"))))
        return new Response("stored " + stored.size)
      } catch (error) {
        return new Response(error.message, { status: 400 })
      }
    }
    if (path === "/head") return Response.json(await env.storage.head(url.searchParams.get("key")))
    if (path === "/forge") {
      try {
        await env.email.send("From: someone@elsewhere.test\\r\\nTo: zoe@example.com\\r\\nSubject: forged\\r\\n\\r\\nHi.\\r\\n")
        return new Response("sent")
      } catch (error) {
        return new Response(error.message, { status: 400 })
      }
    }
    if (path === "/count") {
      let size = 0
      const reader = request.body.getReader()
      for (let read = await reader.read(); !read.done; read = await reader.read()) size += read.value.byteLength
      return new Response(String(size))
    }
    if (path === "/release") {
      release()
      return new Response("released")
    }
    if (path === "/stream") {
      const { readable, writable } = new TransformStream()
      const writer = writable.getWriter()
      const encode = (text) => new TextEncoder().encode(text)
      // The second chunk waits for /release: a response the edge buffered whole would never show the first alone.
      writer.write(encode("first\\n")).then(() => Promise.race([gate, new Promise((resolve) => setTimeout(resolve, 30000))]))
        .then(() => writer.write(encode("second\\n"))).then(() => writer.close())
      return new Response(readable, { headers: { "content-type": "text/plain" } })
    }
    return Response.json({ version: "VERSION", url: request.url, headers: Object.fromEntries(request.headers) })
  }
}`

const bundle = (version: string, manifest: Record<string, unknown> = {}) =>
  Effect.runPromise(
    bundleOf([
      manifestEntry({ name: "faults", ...manifest }),
      { name: "worker/index.js", content: worker.replace("VERSION", version) },
      { name: "assets/index.html", content: "home page" }
    ])
  )

/**
 * The faults and route rules of decisions part 13 a reviewer checks from outside, on the server `npm start` builds:
 * the in-process runtime tests (packages/node/test) prove them against workerd, this proves the binary wires them.
 */
describe("worker faults and route rules on the server binary", { timeout: 300_000 }, () => {
  let server: ServerProcess
  let base: string
  let edgePort: number
  let dataDir: string
  let host: string
  let call: Awaited<ReturnType<typeof signIn>>["call"]
  let token: string
  let project: string
  const deploy = async (bytes: Uint8Array) => {
    const reply = await fetch(`${base}${project}/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
      body: bytes
    })
    return { status: reply.status, body: (await reply.json()) as any }
  }
  const get = (path: string, options?: Parameters<typeof edge>[3]) => edge(edgePort, host, path, options)

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-worker-faults-"))
    const port = await freePort()
    edgePort = await freePort()
    base = `http://127.0.0.1:${port}`
    server = await startServer(base, {
      SERVICE_DATA_DIR: dataDir,
      SERVICE_LISTEN: `127.0.0.1:${port}`,
      SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}`,
      SERVICE_DNS_LISTEN: `127.0.0.1:${await freePort()}`,
      DATABASE_URL: "",
      SERVICE_WORKER_TIMEOUT: "10 seconds",
      SERVICE_MAIL_DOMAIN: "mail.faults.test",
      SERVICE_PLAN_LIMITS: JSON.stringify({ free: { storageQuotaBytes: 1024 * 1024 } })
    })
    const signed = await signIn(base, "fault-finder")
    call = signed.call
    token = signed.token
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    project = `/v1/orgs/${slug}/projects/faults`
    const created = await call("POST", `/v1/orgs/${slug}/projects`, { name: "faults" })
    expect(created.status).toBe(201)
    host = created.body.hostname as string
    expect((await call("POST", `${project}/storage`)).status).toBe(200)
    expect((await call("POST", `${project}/email`)).status).toBe(200)
    expect((await deploy(await bundle("one"))).status).toBe(201)
    // Grants reach the worker at the next convergence.
    await until("the grants in env", async () => {
      const reply = await get("/bindings")
      return reply.text === JSON.stringify({ storage: "object", email: "object" }) ? true : undefined
    })
  }, 240_000)
  afterAll(async () => {
    await stopServer(server?.child, "SIGTERM")
    rmSync(dataDir, { recursive: true, force: true })
  })

  it("assets first, other paths to the worker with the client's URL and headers, minus the service's own; /__service/* stays the service's; the response streams", async () => {
    expect(await get("/")).toEqual({ status: 200, text: "home page" })
    const seen = await get("/api/echo?q=1", {
      headers: {
        host: `${host}:${edgePort}`,
        cookie: "__Host-service_access=pass; kept=1",
        "service-access-bypass": "secret",
        "x-forwarded-for": "203.0.113.9",
        "x-forwarded-proto": "https",
        "x-custom": "yes"
      }
    })
    expect(seen.status).toBe(200)
    const echoed = JSON.parse(seen.text)
    expect(echoed.url).toBe(`http://${host}:${edgePort}/api/echo?q=1`)
    expect(echoed.headers).toMatchObject({
      host: `${host}:${edgePort}`,
      cookie: "kept=1",
      "x-forwarded-for": "127.0.0.1",
      "x-forwarded-proto": "http",
      "x-custom": "yes"
    })
    expect(echoed.headers["service-access-bypass"]).toBeUndefined()
    const system = await get("/__service/nothing-here")
    expect(system.status).toBe(404)
    expect(system.text).not.toContain("version")
    // While auth is not granted, /__service/auth/* is the worker's like any path.
    expect(JSON.parse((await get("/__service/auth/login")).text).version).toBe("one")

    const first = await new Promise<{ chunk: string; rest: Promise<string> }>((resolve, reject) => {
      const request = Http.request(
        { host: "127.0.0.1", port: edgePort, path: "/stream", headers: { host } },
        (response) => {
          response.setEncoding("utf8")
          response.once("data", (chunk: string) => {
            let rest = ""
            response.on("data", (more: string) => (rest += more))
            resolve({ chunk, rest: new Promise((done) => response.on("end", () => done(rest))) })
          })
        }
      )
      request.on("error", reject)
      request.end()
    })
    expect(first.chunk).toBe("first\n")
    expect((await get("/release")).text).toBe("released")
    expect(await first.rest).toBe("second\n")
  })

  it("the access policy and a custom hostname hold in front of the worker as they do for assets", async () => {
    expect((await call("PUT", `${project}/access`, { mode: "password", password: "open sesame 42" })).status).toBe(200)
    const shut = await until("the policy at the edge", async () => {
      const reply = await get("/api/private")
      return reply.status === 401 ? reply : undefined
    })
    expect(JSON.parse(shut.text).code).toBe("unauthorized")
    const pass = await new Promise<string>((resolve, reject) => {
      const request = Http.request(
        {
          host: "127.0.0.1",
          port: edgePort,
          path: "/__service/access/password",
          method: "POST",
          agent: false,
          headers: { host, "content-type": "application/x-www-form-urlencoded" }
        },
        (response) => {
          response.resume()
          resolve(String(response.headers["set-cookie"]?.[0] ?? "").split(";")[0]!)
        }
      )
      request.on("error", reject)
      request.end("password=open+sesame+42")
    })
    expect(pass).toMatch(/^__Host-service_access=/u)
    const admitted = await get("/api/private", { headers: { cookie: `${pass}; app=1` } })
    expect(admitted.status).toBe(200)
    expect(JSON.parse(admitted.text).headers.cookie).toBe("app=1")
    const bypass = (await call("POST", `${project}/access/bypass`)).body.secret as string
    const ci = await get("/api/private", { headers: { "service-access-bypass": bypass } })
    expect(ci.status).toBe(200)
    expect(JSON.parse(ci.text).headers["service-access-bypass"]).toBeUndefined()
    expect((await call("PUT", `${project}/access`, { mode: "public" })).status).toBe(200)
    await until("the public policy at the edge", async () => ((await get("/api")).status === 200 ? true : undefined))

    // A name in one of the org's own zones is proven at once.
    const org = project.split("/")[3]!
    expect((await call("POST", `/v1/orgs/${org}/dns/zones`, { name: "faults.test" })).status).toBe(200)
    expect((await call("POST", `${project}/hostnames`, { name: "www.faults.test" })).status).toBe(200)
    expect((await call("POST", `${project}/hostnames/www.faults.test/verify`)).body.status).toBe("active")
    const custom = await until("the custom hostname at the edge", async () => {
      const reply = await edge(edgePort, "www.faults.test", "/api/custom")
      return reply.status === 200 ? reply : undefined
    })
    expect(JSON.parse(custom.text)).toMatchObject({ url: "http://www.faults.test/api/custom", version: "one" })
    expect((await edge(edgePort, "www.faults.test", "/")).text).toBe("home page")
  })

  it("a worker's fetch to loopback, private or link-local addresses is rejected inside the worker", async () => {
    const targets = [
      "http://10.0.0.1/",
      "http://169.254.169.254/latest/meta-data/",
      `http://[::1]:${new URL(base).port}/livez`,
      `http://127.0.0.1:${edgePort}/`,
      `http://localhost:${new URL(base).port}/livez`
    ]
    const reply = await get(`/egress?targets=${encodeURIComponent(JSON.stringify(targets))}`)
    expect(reply.status).toBe(200)
    expect(JSON.parse(reply.text)).toEqual(Object.fromEntries(targets.map((target) => [target, "rejected"])))
  })

  it("a put past the quota rejects with quota_exceeded and stores nothing; mail from another address is from_not_allowed", async () => {
    expect(await get("/put?key=small&size=600000")).toEqual({ status: 200, text: "stored 600000" })
    const over = await get("/put?key=over&size=600000")
    expect(over.status).toBe(400)
    expect(over.text).toMatch(/^quota_exceeded/u)
    expect(await get("/head?key=over")).toEqual({ status: 200, text: "null" })
    const forged = await get("/forge")
    expect(forged.status).toBe(400)
    expect(forged.text).toMatch(/^from_not_allowed/u)
  })

  it("megabytes of console output: the event's lines are cut to 16 KiB, at most 256, and it says truncated", async () => {
    expect(await get("/print")).toEqual({ status: 200, text: "printed" })
    const event = await until("the /print event", async () => {
      const page = await call("GET", `${project}/logs?limit=50`)
      return page.body.items.find((item: any) => item.request.url.endsWith("/print"))
    })
    expect(event).toMatchObject({ outcome: "ok", response: { status: 200 }, truncated: true })
    expect(event.logs.length).toBeGreaterThan(0)
    expect(event.logs.length).toBeLessThanOrEqual(256)
    for (const line of event.logs)
      expect(Buffer.byteLength(JSON.stringify(line.message))).toBeLessThanOrEqual(16 * 1024 + 8)
  })

  it("a streamed 100 MiB request body reaches the worker whole; a streamed 101 MiB one, never declared, is 413", async () => {
    expect(await streamBody(edgePort, host, "/count", 100 * 1024 * 1024)).toEqual({
      status: 200,
      text: String(100 * 1024 * 1024)
    })
    const tooLarge = await streamBody(edgePort, host, "/count", 101 * 1024 * 1024)
    expect({ status: tooLarge.status, code: JSON.parse(tooLarge.text).code }).toEqual({
      status: 413,
      code: "payload_too_large"
    })
    // The client stopped sending mid-body: the edge closed that connection, so the next request (Node's pooled
    // connections, as a browser's) is answered instead of waiting behind the unread rest.
    expect((await get("/api")).status).toBe(200)
  })

  it("a bundle without its entry or whose entry does not load is refused with the runtime's message, and nothing is kept", async () => {
    const before = (await call("GET", `${project}/deployments`)).body.items.length
    const missing = await deploy(
      await Effect.runPromise(
        bundleOf([manifestEntry({ name: "faults" }), { name: "worker/util.js", content: "export const x = 1" }])
      )
    )
    expect(missing.status).toBe(400)
    expect(missing.body).toMatchObject({ code: "invalid_bundle", details: { reason: "worker_main_missing" } })
    const named = await deploy(
      await Effect.runPromise(
        bundleOf([manifestEntry({ name: "faults", main: "app.js" }), { name: "worker/index.js", content: worker }])
      )
    )
    expect(named.body).toMatchObject({ code: "invalid_bundle", details: { reason: "worker_main_missing" } })
    const broken = await deploy(
      await Effect.runPromise(
        bundleOf([
          manifestEntry({ name: "faults" }),
          { name: "worker/index.js", content: `import x from "./absent.js"\nexport default { fetch() {} }` }
        ])
      )
    )
    expect(broken.status).toBe(400)
    expect(broken.body).toMatchObject({ code: "invalid_bundle", details: { reason: "worker_invalid" } })
    expect(broken.body.details.message).toContain("absent.js")
    const noFetch = await deploy(
      await Effect.runPromise(
        bundleOf([manifestEntry({ name: "faults" }), { name: "worker/index.js", content: "export default {}" }])
      )
    )
    expect(noFetch.body).toMatchObject({ code: "invalid_bundle", details: { reason: "worker_invalid" } })
    expect(noFetch.body.details.message).toEqual(expect.any(String))
    expect((await call("GET", `${project}/deployments`)).body.items.length).toBe(before)
    expect(JSON.parse((await get("/api")).text).version).toBe("one")
  })

  it("deploys and rollbacks while requests flow fail none of them; workerFirst sends every path to the worker", async () => {
    const live = (await call("GET", `${project}/deployments`)).body.items[0].id as string
    const next = await bundle("two")
    let stop = false
    const statuses = new Map<string, number>()
    const agent = new Http.Agent({ keepAlive: true })
    const one = () =>
      new Promise<void>((resolve) => {
        const request = Http.request(
          { host: "127.0.0.1", port: edgePort, path: "/api", agent, headers: { host } },
          (response) => {
            response.resume()
            response.on("end", () => {
              const key = String(response.statusCode)
              statuses.set(key, (statuses.get(key) ?? 0) + 1)
              resolve()
            })
          }
        )
        request.on("error", (error: NodeJS.ErrnoException) => {
          statuses.set(error.code ?? "error", (statuses.get(error.code ?? "error") ?? 0) + 1)
          resolve()
        })
        request.end()
      })
    const clients = Array.from({ length: 8 }, async () => {
      while (!stop) await one()
    })
    try {
      for (let round = 0; round < 3; round++) {
        expect((await deploy(next)).status).toBe(201)
        expect((await call("POST", `${project}/rollback`, { deploymentId: live })).status).toBe(200)
      }
    } finally {
      stop = true
      await Promise.all(clients)
      agent.destroy()
    }
    expect([...statuses.keys()]).toEqual(["200"])
    expect(statuses.get("200")).toBeGreaterThan(0)

    expect((await deploy(await bundle("first", { workerFirst: true }))).status).toBe(201)
    const root = await get("/")
    expect(JSON.parse(root.text).version).toBe("first")
  })

  it("workerd killed with SIGKILL is started again and the project answers", async () => {
    expect((await get("/api")).status).toBe(200)
    const runtimes = descendantsNamed("workerd")(server.child.pid!)
    expect(runtimes.length).toBeGreaterThan(0)
    for (const pid of runtimes) process.kill(pid, "SIGKILL")
    const answered = await until("an answer after the kill", async () => {
      const reply = await get("/api")
      return reply.status === 200 ? reply : undefined
    })
    expect(JSON.parse(answered.text).version).toBe("first")
    const after = descendantsNamed("workerd")(server.child.pid!)
    expect(after.length).toBeGreaterThan(0)
    expect(after.filter((pid) => runtimes.includes(pid))).toEqual([])
  })
})
