import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import type { Database } from "@hostplane/core"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DevServer, startDevServer } from "../src/dev/index.ts"
import { workerdBinary } from "../src/index.ts"

const worker = `export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    try {
      if (url.pathname === "/bad") await env.db.query("selec 1")
      const result = await env.db.query("select $1::int + 1 as n, current_user as who", [url.searchParams.get("n")])
      return Response.json({ connectionString: env.db.connectionString, rows: result.rows, rowCount: result.rowCount })
    } catch (error) {
      return Response.json({ message: error.message, code: error.code ?? null }, { status: 500 })
    }
  }
}`

/** `hostplane dev --linked`: env.db is the linked project's database, queried as its role by the node's own binding. */
describe("hostplane dev with the linked project's database (real workerd, real PostgreSQL)", () => {
  const scope = Effect.runSync(Scope.make())
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-dev-db-"))
  let server: DevServer
  let database: Database.DatabaseConnect

  beforeAll(async () => {
    const context = await Effect.runPromise(Layer.buildWithScope(TestDatabase.layerBare, scope))
    const url = new URL(Redacted.value(Context.get(context, TestDatabase).url))
    database = {
      host: url.hostname,
      port: Number(url.port),
      database: url.pathname.slice(1),
      user: decodeURIComponent(url.username),
      password: decodeURIComponent(url.password),
      sslmode: "disable",
      url: url.toString()
    }
    Fs.mkdirSync(Path.join(dir, "worker"))
    Fs.writeFileSync(Path.join(dir, "service.json"), JSON.stringify({ name: "devdb", database: true }))
    Fs.writeFileSync(Path.join(dir, "worker/index.js"), worker)
    server = await startDevServer({
      dir,
      host: "127.0.0.1",
      port: 0,
      binary: workerdBinary(),
      print: () => undefined,
      database
    })
  }, 180_000)
  afterAll(async () => {
    await server?.stop()
    await Effect.runPromise(Scope.close(scope, Exit.void))
    Fs.rmSync(dir, { recursive: true, force: true })
  })

  it("env.db.connectionString is the linked connection and query runs there with part 13's types", async () => {
    const reply = await fetch(`${server.url}/?n=41`)
    expect(reply.status).toBe(200)
    expect(await reply.json()).toEqual({
      connectionString: database.url,
      rows: [{ n: 42, who: database.user }],
      rowCount: 1
    })
  })

  it("a PostgreSQL error rejects with its SQLSTATE as code, as in a deployed worker", async () => {
    const reply = await fetch(`${server.url}/bad`)
    expect(reply.status).toBe(500)
    expect(((await reply.json()) as { code: string }).code).toBe("42601")
  })
})
