import { bundleOf, manifestEntry } from "@hostplane/testkit"
import { Effect } from "effect"
import type { ChildProcess } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import * as Http from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, signIn, startOnData, stopServer } from "./support/ServerProcess.ts"

const edgeGet = (port: number, host: string, path: string) =>
  new Promise<number>((resolve, reject) => {
    const request = Http.request({ host: "127.0.0.1", port, path, headers: { host } }, (response) => {
      response.resume()
      response.on("end", () => resolve(response.statusCode!))
    })
    request.on("error", reject)
    request.end()
  })

/**
 * An invocation's event waits on the node before it is written: for its worker's report (up to a second when the worker
 * printed nothing), then for the next batch insert. A server stopped with SIGTERM writes what it still holds, so the
 * last requests before a restart or an upgrade are in the logs after it.
 */
describe("runtime log events across a graceful stop", () => {
  let dataDir: string
  let base: string
  let edgePort: number
  let server: ChildProcess | undefined

  const start = async () => {
    edgePort = await freePort()
    ;({ base, child: server } = await startOnData(dataDir, { SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}` }, 1_200))
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-logs-stop-"))
    await start()
  }, 360_000)
  afterAll(async () => {
    await stopServer(server, "SIGTERM")
    rmSync(dataDir, { recursive: true, force: true })
  }, 60_000)

  it("every request answered before SIGTERM has its event after the restart, each once", async () => {
    const { call, token } = await signIn(() => base, "logs-stopper")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    const project = await call("POST", `/v1/orgs/${slug}/projects`, { name: "quiet" })
    expect(project.status).toBe(201)
    // Prints nothing: each invocation's event waits the whole report wait on the node.
    const bytes = await Effect.runPromise(
      bundleOf([
        manifestEntry({ name: "quiet" }),
        { name: "worker/index.js", content: `export default { fetch() { return new Response("quiet") } }` }
      ])
    )
    const deployed = await fetch(`${base}/v1/orgs/${slug}/projects/quiet/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
      body: bytes
    })
    expect(deployed.status).toBe(201)
    const host = project.body.hostname as string
    const count = 40
    for (let i = 0; i < count; i++) expect(await edgeGet(edgePort, host, `/call/${i}`)).toBe(200)
    await stopServer(server, "SIGTERM")

    await start()
    const listed = await call("GET", `/v1/orgs/${slug}/projects/quiet/logs?limit=100`)
    expect(listed.status).toBe(200)
    const paths = (listed.body.items as ReadonlyArray<{ request: { url: string } }>).map(
      (event) => new URL(event.request.url).pathname
    )
    expect(paths.sort()).toEqual(Array.from({ length: count }, (_, i) => `/call/${i}`).sort())
  }, 360_000)
})
