import { EmbeddedPostgres } from "@hostplane/adapters-pg"
import { bundleOf, manifestEntry } from "@hostplane/testkit"
import { Effect, Exit, Redacted, Scope } from "effect"
import { chmodSync, mkdtempSync, rmSync } from "node:fs"
import * as Http from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type ServerProcess, signIn, startServer, stopServer } from "./support/ServerProcess.ts"

/** A real PostgreSQL the test starts, stops and starts again on the same cluster and port. */
const startPostgres = async (directory: string, port: number) => {
  const scope = Scope.makeUnsafe()
  const server = await Effect.runPromise(
    EmbeddedPostgres.start({ directory, port, durable: false }).pipe(Scope.provide(scope))
  )
  return { url: Redacted.value(server.url), stop: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

const edgeGet = (port: number, host: string, path: string) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const request = Http.request({ host: "127.0.0.1", port, path, headers: { host } }, (response) => {
      let text = ""
      response.on("data", (chunk) => (text += chunk))
      response.on("end", () => resolve({ status: response.statusCode!, text }))
    })
    request.on("error", reject)
    request.setTimeout(10_000, () => request.destroy(new Error(`${host}${path} hung`)))
    request.end()
  })

const bundle = (version: string) =>
  Effect.runPromise(
    bundleOf([
      manifestEntry({ name: "site" }),
      { name: "assets/index.html", content: `<h1>site ${version}</h1>` },
      {
        name: "worker/index.js",
        content: `export default { fetch(request) { return new Response("worker ${version} " + new URL(request.url).pathname) } }`
      }
    ])
  )

/** decisions.md part 15: while PostgreSQL is down, the edge keeps serving the live deployments it knows. */
describe("the edge while the control database is down", () => {
  let directory: string
  let pgPort: number
  let postgres: Awaited<ReturnType<typeof startPostgres>>
  let server: ServerProcess
  let base: string
  let edgePort: number
  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), "hostplane-edge-outage-"))
    chmodSync(directory, 0o755)
    pgPort = await freePort()
    postgres = await startPostgres(join(directory, "pg"), pgPort)
    const port = await freePort()
    edgePort = await freePort()
    base = `http://127.0.0.1:${port}`
    server = await startServer(
      base,
      {
        DATABASE_URL: postgres.url,
        SERVICE_ENABLE_DEV_AUTH: "true",
        SERVICE_DATA_DIR: join(directory, "data"),
        SERVICE_LISTEN: `127.0.0.1:${port}`,
        SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}`,
        SERVICE_DNS_LISTEN: "off",
        SERVICE_WORKER_TIMEOUT: "10 seconds"
      },
      440
    )
  }, 180_000)
  afterAll(async () => {
    await stopServer(server?.child, "SIGKILL")
    await postgres?.stop()
    rmSync(directory, { recursive: true, force: true })
  })

  it("serves a deployed site's assets and its worker from what it holds, answers 503 no_core for a host it never saw, and follows changes once the database is back", async () => {
    const { call, token } = await signIn(base, "edge-outage-user")
    expect((await call("POST", "/v1/orgs", { name: "Outage", slug: "edge-outage-org" })).status).toBe(201)
    const project = async (name: string) => {
      const created = await call("POST", "/v1/orgs/edge-outage-org/projects", { name })
      expect(created.status).toBe(201)
      return created.body.hostname as string
    }
    const deploy = async (name: string, version: string) => {
      const reply = await fetch(`${base}/v1/orgs/edge-outage-org/projects/${name}/deployments`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
        body: await bundle(version)
      })
      expect(reply.status, await reply.text()).toBe(201)
    }
    const host = await project("known")
    const cold = await project("cold")
    await deploy("known", "v1")
    await deploy("cold", "v1")
    expect(await edgeGet(edgePort, host, "/")).toEqual({ status: 200, text: "<h1>site v1</h1>" })
    expect(await edgeGet(edgePort, host, "/api/hello")).toEqual({ status: 200, text: "worker v1 /api/hello" })

    await postgres.stop()
    expect((await call("GET", "/v1/me")).status).toBe(503)
    for (let i = 0; i < 3; i++) {
      expect(await edgeGet(edgePort, host, "/")).toEqual({ status: 200, text: "<h1>site v1</h1>" })
      expect(await edgeGet(edgePort, host, `/api/${i}`)).toEqual({ status: 200, text: `worker v1 /api/${i}` })
    }
    // A host never requested is not held: the database's absence is said as such, not as a fault.
    const unknown = await edgeGet(edgePort, cold, "/")
    expect(unknown.status).toBe(503)
    expect(JSON.parse(unknown.text)).toMatchObject({ code: "no_core" })
    expect(server.output()).not.toContain('"code":"internal"')

    postgres = await startPostgres(join(directory, "pg"), pgPort)
    let status = 0
    for (let i = 0; i < 120 && status !== 200; i++) {
      status = (await call("GET", "/v1/me")).status
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 250))
    }
    expect(status).toBe(200)
    // The first write once the database answers goes through, whatever the watch's last ping found.
    await deploy("known", "v2")
    expect(await edgeGet(edgePort, host, "/")).toEqual({ status: 200, text: "<h1>site v2</h1>" })
    expect(await edgeGet(edgePort, host, "/api/x")).toEqual({ status: 200, text: "worker v2 /api/x" })
    expect((await edgeGet(edgePort, cold, "/")).status).toBe(200)
  }, 180_000)
})
