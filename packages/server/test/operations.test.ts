import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import * as Http from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, root, spawnScript } from "./support/ServerProcess.ts"

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Every process under `pid` now (children first seen through /proc), the way `pstree` finds them. */
const descendants = (pid: number): Array<number> => {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
    .split(" ")
    .filter((text) => text.trim() !== "")
    .map(Number)
  return children.flatMap((child) => [child, ...descendants(child)])
}

const waitFor = async (
  what: string,
  check: () => Promise<boolean> | boolean,
  seconds: number,
  output: () => string
) => {
  const deadline = Date.now() + seconds * 1000
  while (Date.now() < deadline) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error(`${what} did not happen:\n${output()}`)
}

const answers = (url: string) =>
  fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
    (reply) => reply.ok,
    () => false
  )

/** The server as an operator runs it: `npm start` in the checkout, stopped by signalling npm. */
describe("npm start: health, keep-alive, and a SIGTERM that drains and stops everything", () => {
  let npm: ChildProcess
  let output = ""
  let dataDir: string
  let base: string
  let edgePort: number
  let exited: Promise<number | null>
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-ops-"))
    const port = await freePort()
    edgePort = await freePort()
    base = `http://127.0.0.1:${port}`
    npm = spawn("npm", ["start"], {
      cwd: root,
      env: {
        ...process.env,
        SERVICE_DATA_DIR: dataDir,
        SERVICE_LISTEN: `127.0.0.1:${port}`,
        SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}`,
        SERVICE_DNS_LISTEN: `127.0.0.1:${await freePort()}`,
        SERVICE_GIT_SSH_LISTEN: `127.0.0.1:${await freePort()}`,
        DATABASE_URL: ""
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    npm.stdout!.on("data", (chunk) => (output += chunk))
    npm.stderr!.on("data", (chunk) => (output += chunk))
    exited = new Promise((resolve) => npm.once("exit", (code) => resolve(code)))
    await waitFor(
      "the start",
      () => answers(`${base}/livez`),
      110,
      () => output
    )
  }, 120_000)
  afterAll(() => {
    if (npm.exitCode === null) npm.kill("SIGKILL")
    rmSync(dataDir, { recursive: true, force: true })
  })

  it("answers GET /livez and GET /readyz without authentication", async () => {
    const live = await fetch(`${base}/livez`)
    expect(live.status).toBe(200)
    expect(live.headers.get("x-request-id")).toMatch(/^req_/)
    const ready = await fetch(`${base}/readyz`)
    expect(ready.status).toBe(200)
    const body = (await ready.json()) as { checks: { database: { ok: boolean }; migrations: Record<string, unknown> } }
    expect(body.checks.database.ok).toBe(true)
    expect(body.checks.migrations).toMatchObject({ ok: true })
    expect(body.checks.migrations.applied).toBe(body.checks.migrations.latest)
  })

  it("keeps an idle connection open past Node's default 5 s, on the API and the edge, and announces 65 s", async () => {
    // Both listeners idle side by side: the check costs one wait, not one per listener.
    const idleThenReuse = async (url: string) => {
      const agent = new Http.Agent({ keepAlive: true, maxSockets: 1 })
      const get = () =>
        new Promise<{ reused: boolean; keepAlive: string | undefined }>((resolve, reject) => {
          const request = Http.get(url, { agent, headers: { host: "nobody.example.test" } }, (response) => {
            response.resume()
            const keepAlive = response.headers["keep-alive"]?.toString()
            response.on("end", () => resolve({ reused: request.reusedSocket, keepAlive }))
          })
          request.on("error", reject)
        })
      // The server's idle timeout as it tells clients: the default SERVICE_KEEPALIVE_TIMEOUT, above the 60 s of
      // common load balancers.
      expect(await get(), url).toEqual({ reused: false, keepAlive: "timeout=65" })
      let closed = false
      for (const socket of Object.values(agent.freeSockets).flat()) socket?.once("close", () => (closed = true))
      await new Promise((resolve) => setTimeout(resolve, 6_500))
      expect(closed, url).toBe(false)
      expect((await get()).reused, url).toBe(true)
      agent.destroy()
    }
    await Promise.all([idleThenReuse(`${base}/livez`), idleThenReuse(`http://127.0.0.1:${edgePort}/`)])
  }, 30_000)

  it("refuses to start a second server on a port in use, naming the listener, its address and its setting", async () => {
    let second = ""
    const otherData = mkdtempSync(join(tmpdir(), "hostplane-ops-second-"))
    // On the first server's database, as a second `npm start` of the same deployment: the listeners bind once the
    // database answers, and this one's is up with its migrations applied, so no cluster is made for a server that
    // cannot start.
    const cluster = join(dataDir, "pg")
    const password = readFileSync(join(cluster, "password"), "utf8").trim()
    const pgPort = readFileSync(join(cluster, "data", "postmaster.pid"), "utf8")
      .split("\n")[3]!
      .trim()
    const child = spawnScript("start", {
      env: {
        ...process.env,
        SERVICE_DATA_DIR: otherData,
        SERVICE_LISTEN: `127.0.0.1:${await freePort()}`,
        SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}`,
        SERVICE_DNS_LISTEN: "off",
        SERVICE_GIT_SSH_LISTEN: "off",
        DATABASE_URL: `postgres://postgres:${password}@127.0.0.1:${pgPort}/postgres`
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    child.stdout!.on("data", (chunk) => (second += chunk))
    child.stderr!.on("data", (chunk) => (second += chunk))
    const code = await new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    rmSync(otherData, { recursive: true, force: true })
    expect(code).not.toBe(0)
    const line = second.split("\n").find((entry) => entry.includes("EADDRINUSE"))
    expect(line, second).toBeDefined()
    const entry = JSON.parse(line!)
    expect(entry.level).toBe("ERROR")
    expect(entry.annotations).toEqual({
      listener: "edge",
      address: `127.0.0.1:${edgePort}`,
      setting: "SERVICE_EDGE_LISTEN",
      code: "EADDRINUSE"
    })
    expect(entry.message).toContain("SERVICE_EDGE_LISTEN")
  }, 120_000)

  it("on SIGTERM to npm: finishes the request in flight, then the server and its PostgreSQL are gone and npm exits 0", async () => {
    const postgres = Number(readFileSync(join(dataDir, "pg", "data", "postmaster.pid"), "utf8").split("\n")[0])
    const tree = descendants(npm.pid!)
    expect(tree).toContain(postgres)
    const body = JSON.stringify({ subject: "in-flight" })
    const url = new URL(`${base}/v1/auth/dev/login`)
    const reply = new Promise<number>((resolve, reject) => {
      const request = Http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          headers: { "content-type": "application/json", "content-length": body.length }
        },
        (response) => {
          response.resume()
          resolve(response.statusCode!)
        }
      )
      request.on("error", reject)
      // Half the body now, the rest after the signal: the request is in flight while the server stops.
      request.write(body.slice(0, 5))
      setTimeout(() => {
        npm.kill("SIGTERM")
        setTimeout(() => request.end(body.slice(5)), 500)
      }, 100)
    })
    expect(await reply).toBe(200)
    expect(await exited).toBe(0)
    await waitFor(
      "every process to stop",
      () => tree.every((pid) => !alive(pid)),
      30,
      () => output
    )
    expect(alive(postgres)).toBe(false)
    expect(await answers(`${base}/livez`)).toBe(false)
  }, 60_000)
})
