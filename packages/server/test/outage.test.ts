import { EmbeddedPostgres } from "@hostplane/adapters-pg"
import { Effect, Exit, Redacted, Scope } from "effect"
import { chmodSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type ServerProcess, signIn, spawnScript, startServer, stopServer } from "./support/ServerProcess.ts"

/** A real PostgreSQL the test starts, stops and starts again on the same cluster and port. */
const startPostgres = async (directory: string, port: number) => {
  const scope = Scope.makeUnsafe()
  const server = await Effect.runPromise(
    EmbeddedPostgres.start({ directory, port, durable: false }).pipe(Scope.provide(scope))
  )
  return { url: Redacted.value(server.url), stop: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

describe("the control database stops and comes back", () => {
  let directory: string
  let pgPort: number
  let postgres: Awaited<ReturnType<typeof startPostgres>>
  let server: ServerProcess
  let base: string
  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), "hostplane-outage-"))
    chmodSync(directory, 0o755)
    pgPort = await freePort()
    postgres = await startPostgres(join(directory, "pg"), pgPort)
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    server = await startServer(base, {
      DATABASE_URL: postgres.url,
      SERVICE_ENABLE_DEV_AUTH: "true",
      SERVICE_DATA_DIR: join(directory, "data"),
      SERVICE_LISTEN: `127.0.0.1:${port}`,
      SERVICE_EDGE_LISTEN: `127.0.0.1:${await freePort()}`,
      SERVICE_DNS_LISTEN: "off",
      SERVICE_WORKERS: "off"
    })
  }, 180_000)
  afterAll(async () => {
    await stopServer(server?.child, "SIGKILL")
    await postgres?.stop()
    rmSync(directory, { recursive: true, force: true })
  })

  it("answers 503 no_core (never 500 or a hang) while it is down, not_ready on /readyz, and recovers by itself", async () => {
    const { call } = await signIn(base, "outage")
    expect((await call("GET", "/v1/me")).status).toBe(200)
    await postgres.stop()
    for (const [method, path, body] of [
      ["GET", "/v1/me", undefined],
      ["GET", "/v1/orgs", undefined],
      ["POST", "/v1/orgs", { name: "Down", slug: "down-org" }]
    ] as const) {
      const reply = await Promise.race([
        call(method, path, body),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${method} ${path} hung`)), 5_000))
      ])
      expect(reply, `${method} ${path}`).toMatchObject({ status: 503, body: { code: "no_core" } })
    }
    const ready = await fetch(`${base}/readyz`)
    expect(ready.status).toBe(503)
    expect(await ready.json()).toMatchObject({ code: "not_ready", details: { checks: { database: { ok: false } } } })
    expect((await fetch(`${base}/livez`)).status).toBe(200)
    expect(server.output()).not.toContain('"code":"internal"')

    postgres = await startPostgres(join(directory, "pg"), pgPort)
    let status = 0
    for (let i = 0; i < 120 && status !== 200; i++) {
      status = (await call("GET", "/v1/me")).status
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 250))
    }
    expect(status).toBe(200)
    expect((await fetch(`${base}/readyz`)).status).toBe(200)
    // The first write once the database answers goes through, though the watch's last ping may still have found it
    // down: a request with a body asks again before it is refused.
    expect((await call("POST", "/v1/orgs", { name: "Back", slug: "back-org" })).status).toBe(201)
  }, 120_000)

  it("refuses to start a replica on a database migrated past its code, saying so", async () => {
    const client = new pg.Client({ connectionString: postgres.url })
    client.on("error", () => {})
    await client.connect()
    await client.query(
      "INSERT INTO hostplane.effect_sql_migrations (migration_id, name) VALUES (9999, 'from_the_future')"
    )
    await client.end()
    let output = ""
    const child = spawnScript("start", {
      env: {
        ...process.env,
        DATABASE_URL: postgres.url,
        SERVICE_DATA_DIR: join(directory, "newer"),
        SERVICE_LISTEN: `127.0.0.1:${await freePort()}`,
        SERVICE_EDGE_LISTEN: `127.0.0.1:${await freePort()}`,
        SERVICE_DNS_LISTEN: "off",
        SERVICE_GIT_SSH_LISTEN: "off",
        SERVICE_WORKERS: "off"
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    child.stdout!.on("data", (chunk) => (output += chunk))
    child.stderr!.on("data", (chunk) => (output += chunk))
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve))
    expect(code).not.toBe(0)
    expect(output).toContain("the database is at migration 9999, newer than this hostplane")
  }, 120_000)
})
