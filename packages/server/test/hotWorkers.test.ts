import { bundleOf, manifestEntry } from "@hostplane/testkit"
import { Effect } from "effect"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import * as Http from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { descendantsNamed } from "../../node/test/support/Processes.ts"
import { connectRaw, rawGet } from "../../node/test/support/RawHttp.ts"
import { freePort, signIn, startOnData, stopServer } from "./support/ServerProcess.ts"

const edgeGet = (edge: string, host: string, path = "/") =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const url = new URL(edge)
    const request = Http.request({ host: url.hostname, port: url.port, path, headers: { host } }, (response) => {
      let text = ""
      response.on("data", (chunk) => (text += chunk))
      response.on("end", () => resolve({ status: response.statusCode!, text }))
    })
    request.on("error", reject)
    request.end()
  })

/** Names its isolate (made on its first request), so the test can tell the hot process's worker from the loader's. */
const worker = (version: string) => `let isolate
export default {
  async fetch(request, env) {
    isolate ??= crypto.randomUUID()
    return Response.json({ version: ${JSON.stringify(version)}, isolate, secret: env.GREETING ?? null })
  }
}`

/** The server's hot workerd process (its config is named hot-<generation>.capnp), if one runs. */
const hotProcess = (serverPid: number) =>
  descendantsNamed("workerd")(serverPid).find((pid) => {
    try {
      return /hot-\d+\.capnp/.test(readFileSync(`/proc/${pid}/cmdline`, "utf8"))
    } catch {
      return false
    }
  })

describe("the server binary serves a busy project from its hot shard", () => {
  let server: Awaited<ReturnType<typeof startOnData>> | undefined
  let dataDir: string
  let edge: string
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-hot-"))
    const edgePort = await freePort()
    edge = `http://127.0.0.1:${edgePort}`
    // A low promotion rate, so four requests at a time make the project hot on a loaded test machine.
    server = await startOnData(
      dataDir,
      {
        SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}`,
        SERVICE_WORKER_HOT_RATE: "5",
        SERVICE_WORKER_TIMEOUT: "5 seconds"
      },
      440
    )
  }, 130_000)
  afterAll(async () => {
    await stopServer(server?.child, "SIGTERM")
    rmSync(dataDir, { recursive: true, force: true })
  })

  it("a project under load becomes hot; deploys and a secret change under load fail no request and reach the hot process; a killed hot process is replaced", async () => {
    const { call, token } = await signIn(server!.base, "hot-owner")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    const project = await call("POST", `/v1/orgs/${slug}/projects`, { name: "busy" })
    expect(project.status).toBe(201)
    const hostname = project.body.hostname as string
    const serverPid = server!.child.pid!
    const deploy = async (version: string) => {
      const bytes = await Effect.runPromise(
        bundleOf([manifestEntry({ name: "busy" }), { name: "worker/index.js", content: worker(version) }])
      )
      const reply = await fetch(`${server!.base}/v1/orgs/${slug}/projects/busy/deployments`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
        body: bytes
      })
      return reply.status
    }
    const answer = async () => JSON.parse((await edgeGet(edge, hostname)).text)

    // Four requests at a time, all along; each must be answered by some version of the worker.
    let running = true
    const failures: Array<string> = []
    let served = 0
    let loading: Promise<unknown> = Promise.resolve()
    const startLoad = () => {
      running = true
      loading = Promise.all(
        Array.from({ length: 4 }, async () => {
          while (running) {
            const reply = await edgeGet(edge, hostname).catch((error: unknown) => ({ status: 0, text: String(error) }))
            if (reply.status === 200 && /"version":"v\d"/.test(reply.text)) served += 1
            else failures.push(`${reply.status} ${reply.text.slice(0, 200)}`)
          }
        })
      )
    }
    const stopLoad = async () => {
      running = false
      await loading
    }
    const until = async (check: () => Promise<boolean> | boolean, ms = 60_000) => {
      const deadline = Date.now() + ms
      while (Date.now() < deadline) {
        if (await Promise.resolve(check()).catch(() => false)) return true
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      return false
    }

    expect(await deploy("v1")).toBe(201)
    const cold = await answer()
    expect(cold.version).toBe("v1")
    expect(hotProcess(serverPid)).toBeUndefined()

    startLoad()
    try {
      // Promoted: a hot workerd process runs, and another isolate than the loader shard's answers.
      expect(
        await until(async () => hotProcess(serverPid) !== undefined && (await answer()).isolate !== cold.isolate)
      ).toBe(true)
      const first = hotProcess(serverPid)!

      // A deploy is served at once (by the loader shard) and reaches a new hot process.
      expect(await deploy("v2")).toBe(201)
      expect((await answer()).version).toBe("v2")
      const secret = await call("PUT", `/v1/orgs/${slug}/projects/busy/secrets/GREETING`, { value: "hot" })
      expect(secret.status).toBe(200)
      expect(
        await until(async () => {
          const now = hotProcess(serverPid)
          const reply = await answer()
          return now !== undefined && now !== first && reply.version === "v2" && reply.secret === "hot"
        })
      ).toBe(true)
      const second = hotProcess(serverPid)!
      expect(await until(() => descendantsNamed("workerd")(serverPid).includes(first) === false)).toBe(true)

      // Killed: the loader shard answers meanwhile, and a new hot process is built.
      process.kill(second, "SIGKILL")
      expect((await answer()).version).toBe("v2")
      expect(await until(() => hotProcess(serverPid) !== undefined && hotProcess(serverPid) !== second)).toBe(true)
    } finally {
      await stopLoad()
    }
    // Only a request in flight on the killed process may fail (one per connection of the load), as 503
    // worker_unavailable; nothing else may.
    expect(failures.length).toBeLessThanOrEqual(4)
    for (const failure of failures) expect(failure).toMatch(/^503 .*worker_unavailable/)
    expect(served).toBeGreaterThan(0)
  }, 240_000)

  it("the edge's byte lane: pipelined worker requests on one kept-alive connection are answered in order with their events, a file hands the connection to node's server, a smuggling head is node's to refuse", async () => {
    const { call, token } = await signIn(server!.base, "lane-owner")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    const project = await call("POST", `/v1/orgs/${slug}/projects`, { name: "lane" })
    expect(project.status).toBe(201)
    const hostname = project.body.hostname as string
    const bytes = await Effect.runPromise(
      bundleOf([
        manifestEntry({ name: "lane" }),
        {
          name: "worker/index.js",
          content: `export default { fetch(request) { const url = new URL(request.url); console.log("lane", url.pathname); return Response.json({ path: url.pathname, forwardedFor: request.headers.get("x-forwarded-for") }) } }`
        },
        { name: "assets/hello.txt", content: "hello asset" }
      ])
    )
    const deployed = await fetch(`${server!.base}/v1/orgs/${slug}/projects/lane/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
      body: bytes
    })
    expect(deployed.status).toBe(201)

    const connection = await connectRaw(edge)
    connection.write(
      rawGet("/a", hostname, "X-Forwarded-For: 10.0.0.9\r\n") +
        rawGet("/b", hostname) +
        `HEAD /c HTTP/1.1\r\nHost: ${hostname}\r\n\r\n` +
        rawGet("/hello.txt", hostname) +
        rawGet("/d", hostname)
    )
    const a = await connection.read()
    const b = await connection.read()
    const c = await connection.read("HEAD")
    const file = await connection.read()
    const d = await connection.read()
    connection.close()
    expect([a, b, c, file, d].map((reply) => reply?.status)).toEqual([200, 200, 200, 200, 200])
    expect(JSON.parse(a!.body)).toEqual({ path: "/a", forwardedFor: "127.0.0.1" })
    expect(JSON.parse(b!.body).path).toBe("/b")
    expect(c!.body).toBe("")
    expect(file!.body).toBe("hello asset")
    expect(JSON.parse(d!.body).path).toBe("/d")

    // A head that declares both a length and chunked coding, hiding a second request: node's server refuses it.
    const smuggler = await connectRaw(edge)
    smuggler.write(
      `GET /e HTTP/1.1\r\nHost: ${hostname}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n` +
        rawGet("/smuggled", hostname)
    )
    expect((await smuggler.read())?.status).toBe(400)
    smuggler.close()

    const logs = `/v1/orgs/${slug}/projects/lane/logs`
    const paths = async () =>
      ((await call("GET", logs)).body.items ?? []).map((event: any) => new URL(event.request.url).pathname).sort()
    const deadline = Date.now() + 15_000
    while (Date.now() < deadline && (await paths()).length < 4) await new Promise((resolve) => setTimeout(resolve, 200))
    expect(await paths()).toEqual(["/a", "/b", "/c", "/d"])
    for (const event of (await call("GET", logs)).body.items) {
      expect(event).toMatchObject({ outcome: "ok", response: { status: 200 } })
    }
  }, 120_000)
})
