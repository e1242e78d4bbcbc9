import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { Effect, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type ServerProcess, signIn, spawnScript, startServer, stopServer } from "./support/ServerProcess.ts"

/** What every backend's database already holds: its own users, sessions, jobs, projects and orgs, with rows. */
const backendTables = [
  "CREATE TABLE users (id serial PRIMARY KEY, email text NOT NULL UNIQUE)",
  "CREATE TABLE sessions (token text PRIMARY KEY, user_id int NOT NULL REFERENCES users (id))",
  "CREATE TABLE jobs (id bigserial PRIMARY KEY, name text NOT NULL, done boolean NOT NULL DEFAULT false)",
  "CREATE TABLE projects (id serial PRIMARY KEY, title text NOT NULL)",
  "CREATE TABLE orgs (id serial PRIMARY KEY, label text NOT NULL)",
  "INSERT INTO users (email) VALUES ('ada@example.com'), ('bob@example.com')",
  "INSERT INTO sessions VALUES ('host-session-1', 1)",
  "INSERT INTO jobs (name) VALUES ('nightly report')",
  "INSERT INTO projects (title) VALUES ('website')",
  "INSERT INTO orgs (label) VALUES ('acme')"
]

/** decisions.md part 18 (schema), through the binary as `npm start` builds it, pointed at a backend's database. */
describe("the server binary on a database holding a backend's own tables", () => {
  // A database created empty, with a plain client on it (the server's default search_path, no name transforms).
  const database = ManagedRuntime.make(TestDatabase.layerBare)
  const query = <A extends object>(text: string) =>
    database.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(text)))
  const snapshot = async () => ({
    columns: await query(`SELECT table_name, column_name, data_type, column_default FROM information_schema.columns
      WHERE table_schema = 'public' ORDER BY table_name, column_name`),
    rows: await Promise.all(
      ["users", "sessions", "jobs", "projects", "orgs"].map((t) => query(`TABLE ${t} ORDER BY 1`))
    ),
    objects: await query(`SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' ORDER BY 1`)
  })
  let before: Awaited<ReturnType<typeof snapshot>>
  let server: ServerProcess | undefined
  let base: string
  let dataDir: string

  beforeAll(async () => {
    for (const statement of backendTables) await query(statement)
    before = await snapshot()
    const { url } = await database.runPromise(Effect.service(TestDatabase))
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-beside-"))
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    server = await startServer(
      base,
      {
        DATABASE_URL: Redacted.value(url),
        SERVICE_DATA_DIR: dataDir,
        SERVICE_LISTEN: `127.0.0.1:${port}`,
        SERVICE_EDGE_LISTEN: `127.0.0.1:${await freePort()}`,
        SERVICE_DNS_LISTEN: "off",
        SERVICE_ENABLE_DEV_AUTH: "true"
      },
      440
    )
  }, 150_000)
  afterAll(async () => {
    await stopServer(server?.child, "SIGKILL")
    await database.dispose()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it("starts, signs in, creates an org and a project in its own schema; the backend's tables and rows are as they were", async () => {
    const user = await signIn(base, "beside-host")
    expect((await user.call("POST", "/v1/orgs", { name: "Beside", slug: "beside" })).status).toBe(201)
    expect((await user.call("POST", "/v1/orgs/beside/projects", { name: "site" })).status).toBe(201)
    expect((await user.call("GET", "/v1/orgs/beside/projects/site")).status).toBe(200)

    expect(await snapshot()).toEqual(before)
    // The migrations record is hostplane's, in hostplane's schema; the host's public has none.
    expect(await query(`SELECT to_regclass('public.effect_sql_migrations') AS t`)).toEqual([{ t: null }])
    const [slugs] = [await query<{ slug: string }>(`SELECT slug FROM hostplane.orgs ORDER BY slug`)]
    expect(slugs.map((row) => row.slug)).toContain("beside")
    const [record] = await query<{ n: number }>(`SELECT count(*)::int AS n FROM hostplane.effect_sql_migrations`)
    expect(record!.n).toBeGreaterThan(20)
  })

  it("a schema name that is not an identifier fails the start with a message naming SERVICE_PG_SCHEMA", async () => {
    const child = spawnScript("start", {
      env: {
        ...process.env,
        DATABASE_URL: Redacted.value((await database.runPromise(Effect.service(TestDatabase))).url),
        SERVICE_PG_SCHEMA: "Host-Plane",
        SERVICE_DATA_DIR: dataDir,
        SERVICE_LISTEN: `127.0.0.1:${await freePort()}`,
        SERVICE_EDGE_LISTEN: `127.0.0.1:${await freePort()}`,
        SERVICE_GIT_SSH_LISTEN: `127.0.0.1:${await freePort()}`,
        SERVICE_DNS_LISTEN: "off"
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout!.on("data", (chunk) => (output += chunk))
    child.stderr!.on("data", (chunk) => (output += chunk))
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve))
    expect(code).not.toBe(0)
    expect(output).toContain("SERVICE_PG_SCHEMA")
    expect(output).toContain("Host-Plane")
    expect(await query(`SELECT nspname FROM pg_namespace WHERE nspname ILIKE '%host%'`)).toEqual([
      { nspname: "hostplane" }
    ])
  }, 90_000)
})
