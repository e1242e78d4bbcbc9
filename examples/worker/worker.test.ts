import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bin, buildBundle, hostplane } from "../../packages/cli/test/support/Cli.ts"
import {
  freePort,
  type ServerProcess,
  signIn,
  startServer,
  stopServer
} from "../../packages/server/test/support/ServerProcess.ts"

interface Reply {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly text: string
}

/** A request to the edge with the project's Host. */
const edge = (port: number, host: string, path: string, options: { method?: string; body?: string } = {}) =>
  new Promise<Reply>((resolve, reject) => {
    const request = Http.request(
      { host: "127.0.0.1", port, path, method: options.method ?? "GET", headers: { host } },
      (response) => {
        let text = ""
        response.on("data", (chunk) => (text += chunk))
        response.on("end", () => resolve({ status: response.statusCode!, headers: response.headers, text }))
      }
    )
    request.on("error", reject)
    request.end(options.body)
  })

const until = async (check: () => Promise<boolean>, ms: number) => {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return true
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  return false
}

/** examples/worker deployed with one CLI command to the server as `npm start` runs it, then used through its edge. */
describe("examples/worker: env.db, env.storage and env.ASSETS on npm start", { timeout: 300_000 }, () => {
  let server: ServerProcess
  let base: string
  let edgePort: number
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-example-worker-"))
  // The CLI links the folder it deploys (.hostplane.json): a copy keeps the checkout clean.
  const folder = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-example-copy-"))
  beforeAll(async () => {
    Fs.cpSync(import.meta.dirname, folder, {
      recursive: true,
      filter: (source) => !source.endsWith(".test.ts") && !source.endsWith(".hostplane.json")
    })
    const port = await freePort()
    edgePort = await freePort()
    base = `http://127.0.0.1:${port}`
    await buildBundle()
    server = await startServer(
      base,
      {
        SERVICE_DATA_DIR: dataDir,
        SERVICE_LISTEN: `127.0.0.1:${port}`,
        SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}`,
        SERVICE_DNS_LISTEN: "off",
        DATABASE_URL: "",
        SERVICE_WORKER_TIMEOUT: "30 seconds"
      },
      480
    )
  }, 180_000)
  afterAll(async () => {
    await stopServer(server?.child, "SIGTERM")
    Fs.rmSync(dataDir, { recursive: true, force: true })
    Fs.rmSync(folder, { recursive: true, force: true })
  })

  it("hostplane deploy grants the database and storage; notes, files and pages work through the edge", async () => {
    const { token, call } = await signIn(base, "example-owner")
    const org = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    const cli = {
      env: {
        HOSTPLANE_URL: base,
        HOSTPLANE_TOKEN: token,
        HOSTPLANE_CONFIG_DIR: Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-example-cli-"))
      }
    }
    const deployed = await hostplane(["deploy", folder, "--org", org, "--json"], cli)
    expect(deployed.code, deployed.stderr).toBe(0)
    const result = JSON.parse(deployed.stdout)
    expect(result.grants.map((grant: { addon: string; ok: boolean }) => [grant.addon, grant.ok])).toEqual([
      ["database", true],
      ["storage", true]
    ])
    const host = new URL(result.urls[0]).hostname

    // The page: the asset at `/`, and through env.ASSETS for any other path the app owns.
    const home = await edge(edgePort, host, "/")
    expect(home.status).toBe(200)
    expect(home.text).toContain("<h1>Notes</h1>")
    const page = await edge(edgePort, host, "/some/page")
    expect(page.status).toBe(200)
    expect(page.text).toContain("<h1>Notes</h1>")

    // The grants reach the running worker at the next convergence.
    expect(await until(async () => (await edge(edgePort, host, "/api/notes")).status === 200, 30_000)).toBe(true)
    const added = await edge(edgePort, host, "/api/notes", { method: "POST", body: JSON.stringify({ body: "first" }) })
    expect(added.status, added.text).toBe(201)
    expect(JSON.parse(added.text)).toMatchObject({ id: 1, body: "first" })
    expect(JSON.parse(added.text).created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00$/)
    await edge(edgePort, host, "/api/notes", { method: "POST", body: JSON.stringify({ body: "second" }) })
    const listed = JSON.parse((await edge(edgePort, host, "/api/notes")).text)
    expect(listed.items.map((note: { body: string }) => note.body)).toEqual(["second", "first"])
    expect((await edge(edgePort, host, "/api/notes", { method: "POST", body: "{}" })).status).toBe(400)

    expect(await until(async () => (await edge(edgePort, host, "/api/files")).status === 200, 30_000)).toBe(true)
    const put = await edge(edgePort, host, "/api/files/hello.txt", { method: "PUT", body: "hello, storage" })
    expect(put.status, put.text).toBe(201)
    expect(JSON.parse(put.text)).toMatchObject({ key: "files/hello.txt", size: 14 })
    const got = await edge(edgePort, host, "/api/files/hello.txt")
    expect(got.status).toBe(200)
    expect(got.text).toBe("hello, storage")
    expect(JSON.parse((await edge(edgePort, host, "/api/files")).text)).toEqual({
      items: [{ name: "hello.txt", size: 14 }]
    })
    expect((await edge(edgePort, host, "/api/files/hello.txt", { method: "DELETE" })).status).toBe(204)
    expect((await edge(edgePort, host, "/api/files/hello.txt")).status).toBe(404)

    // Each of those requests is an invocation `hostplane logs` shows, with the status the worker answered.
    const logged = async () => {
      const run = await hostplane(["logs", "--org", org, "--project", "notes", "--json"], cli)
      expect(run.code, run.stderr).toBe(0)
      return (
        JSON.parse(run.stdout) as {
          items: Array<{ request: { method: string; url: string }; response: { status: number } | null }>
        }
      ).items
    }
    expect(
      await until(
        async () =>
          (await logged()).some(
            (event) =>
              event.request.method === "DELETE" &&
              event.request.url.endsWith("/api/files/hello.txt") &&
              event.response?.status === 204
          ),
        30_000
      )
    ).toBe(true)
    const posted = (await logged()).filter(
      (event) => event.request.method === "POST" && event.request.url.endsWith("/api/notes")
    )
    expect(posted.map((event) => event.response?.status).sort()).toEqual([201, 201, 400])

    // `hostplane logs --follow` prints new invocations as they happen.
    const follow = spawn(process.execPath, [bin, "logs", "--org", org, "--project", "notes", "--follow", "--json"], {
      env: { PATH: process.env["PATH"] ?? "", HOME: Os.tmpdir(), ...cli.env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let followed = ""
    follow.stdout.on("data", (chunk) => (followed += chunk))
    try {
      // Requested until one is printed: the stream may still be opening when the first is recorded.
      const seen = await until(async () => {
        await edge(edgePort, host, "/api/notes?followed")
        return followed.includes("/api/notes?followed")
      }, 60_000)
      expect(seen, followed).toBe(true)
    } finally {
      follow.kill("SIGKILL")
    }
  })
})
