import { EmbeddedPostgres } from "@hostplane/adapters-pg"
import { Effect, Exit, Redacted, Scope } from "effect"
import { execFileSync } from "node:child_process"
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type ServerProcess, signIn, startServer, stopServer } from "./support/ServerProcess.ts"

/** The postmaster and every process under it: what a frozen machine or a stuck storage layer stops at once. */
const postgresProcesses = (dataDirectory: string): Array<number> => {
  const postmaster = Number(readFileSync(join(dataDirectory, "postmaster.pid"), "utf8").split("\n")[0])
  const children = execFileSync("ps", ["-o", "pid=", "--ppid", String(postmaster)], { encoding: "utf8" })
    .split("\n")
    .map((line) => Number(line.trim()))
    .filter((pid) => pid > 0)
  return [postmaster, ...children]
}

const signalAll = (pids: ReadonlyArray<number>, signal: NodeJS.Signals) => {
  for (const pid of pids) {
    try {
      process.kill(pid, signal)
    } catch {
      // gone meanwhile
    }
  }
}

/** The reply, or a rejection naming the request once `ms` pass without one. */
const within = <A>(ms: number, what: string, reply: Promise<A>) =>
  Promise.race([reply, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} hung`)), ms))])

describe("the control database freezes (SIGSTOP) and thaws", () => {
  let directory: string
  const scope = Effect.runSync(Scope.make())
  let server: ServerProcess
  let base: string
  let frozen: Array<number> = []
  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), "hostplane-frozen-"))
    chmodSync(directory, 0o755)
    const postgres = await Effect.runPromise(
      EmbeddedPostgres.start({ directory: join(directory, "pg"), port: await freePort(), durable: false }).pipe(
        Scope.provide(scope)
      )
    )
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    server = await startServer(base, {
      DATABASE_URL: Redacted.value(postgres.url),
      SERVICE_ENABLE_DEV_AUTH: "true",
      SERVICE_DATA_DIR: join(directory, "data"),
      SERVICE_LISTEN: `127.0.0.1:${port}`,
      SERVICE_EDGE_LISTEN: `127.0.0.1:${await freePort()}`,
      SERVICE_DNS_LISTEN: "off",
      SERVICE_WORKERS: "off"
    })
  }, 180_000)
  afterAll(async () => {
    signalAll(frozen, "SIGCONT")
    await stopServer(server?.child, "SIGKILL")
    await Effect.runPromise(Scope.close(scope, Exit.void))
    rmSync(directory, { recursive: true, force: true })
  }, 120_000)

  it("answers 503 no_core in bounded time while it is frozen, never a hang, and recovers once it thaws", async () => {
    const { call } = await signIn(base, "frozen")
    expect((await call("POST", "/v1/orgs", { name: "Before", slug: "before-org" })).status).toBe(201)
    expect((await call("GET", "/v1/orgs/before-org/members")).status).toBe(200)

    frozen = postgresProcesses(join(directory, "pg", "data"))
    signalAll(frozen, "SIGSTOP")
    // Requests in flight on pooled connections and requests that need a new connection alike.
    const requests = [
      ["GET", "/v1/orgs/before-org/members", undefined],
      ["POST", "/v1/orgs", { name: "Frozen", slug: "frozen-org" }],
      ["GET", "/v1/orgs/before-org/projects", undefined]
    ] as const
    const started = performance.now()
    const replies = await Promise.all(
      requests.map(([method, path, body]) => within(10_000, `${method} ${path}`, call(method, path, body)))
    )
    const waited = Math.round(performance.now() - started)
    for (const [i, reply] of replies.entries()) {
      expect(reply, `${requests[i]![0]} ${requests[i]![1]}`).toMatchObject({ status: 503, body: { code: "no_core" } })
    }
    console.info(`frozen PostgreSQL: all answered 503 no_core within ${waited} ms`)
    // What the server holds in memory (the caller's memberships) is still served, never a hang.
    const cached = await within(10_000, "GET /v1/orgs", call("GET", "/v1/orgs"))
    expect([200, 503]).toContain(cached.status)
    // A request made while it stays frozen is refused too, and liveness never depends on the database.
    const later = await within(
      10_000,
      "GET /v1/orgs/before-org/projects again",
      call("GET", "/v1/orgs/before-org/projects")
    )
    expect(later).toMatchObject({ status: 503, body: { code: "no_core" } })
    expect((await within(5_000, "GET /livez", fetch(`${base}/livez`))).status).toBe(200)
    const ready = await within(5_000, "GET /readyz", fetch(`${base}/readyz`))
    expect(ready.status).toBe(503)
    expect(await ready.json()).toMatchObject({
      code: "not_ready",
      details: { checks: { database: { ok: false, error: "no answer in time" } } }
    })
    expect(server.output()).not.toContain('"code":"internal"')

    signalAll(frozen, "SIGCONT")
    frozen = []
    let status = 0
    for (let i = 0; i < 240 && status !== 200; i++) {
      status = (await within(20_000, "GET /v1/orgs after the thaw", call("GET", "/v1/orgs"))).status
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 250))
    }
    expect(status).toBe(200)
    // A write goes through once the database answers again (statements left waiting by the freeze may first end).
    let created = 0
    for (let i = 0; i < 120 && created !== 201; i++) {
      created = (await call("POST", "/v1/orgs", { name: "After", slug: "after-org" })).status
      if (created !== 201) await new Promise((resolve) => setTimeout(resolve, 250))
    }
    expect(created).toBe(201)
  }, 180_000)
})
