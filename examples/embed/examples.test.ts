import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { Effect, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { build, stop } from "esbuild"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { stripTypeScriptTypes } from "node:module"
import { tmpdir } from "node:os"
import { basename, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildOptions, root } from "../../packages/server/scripts/bundle.mjs"
import { freePort } from "../../packages/server/test/support/ServerProcess.ts"

const examples = ["main.ts", "express.ts", "hono.ts", "fastify.ts", "koa.ts", "hostUsers.ts"]

/**
 * The later starts' examples as one bundle each, built once with npm start's own esbuild options (shared code in
 * common chunks), in a folder under node_modules/.cache so the packages left outside resolve: a start from the
 * TypeScript sources strips and links hundreds of files, about 4 CPU-s, against about 1 from the bundle.
 */
let bundles = ""
beforeAll(async () => {
  const cache = join(root, "node_modules", ".cache")
  mkdirSync(cache, { recursive: true })
  bundles = mkdtempSync(join(cache, "hostplane-embed-examples-"))
  await build({
    ...buildOptions,
    entryPoints: ["express.ts", "hono.ts", "fastify.ts", "koa.ts"].map((file) => join(import.meta.dirname, file)),
    outdir: bundles,
    splitting: true,
    outExtension: { ".js": ".mjs" }
  }).finally(stop)
}, 300_000)
afterAll(() => (bundles === "" ? undefined : rmSync(bundles, { recursive: true, force: true })))

// Each example's comment runs it with Node's type stripping: its syntax must be what Node strips (the first start
// below runs main.ts that way; the bundles would run syntax Node refuses).
it("every example is TypeScript that Node's type stripping runs: erasable syntax only", () => {
  for (const file of examples) {
    expect(() => stripTypeScriptTypes(readFileSync(join(import.meta.dirname, file), "utf8")), file).not.toThrow()
  }
})

/**
 * What a backend's database already holds: its own users, sessions, jobs, projects and orgs, with rows (in `public`,
 * named so: a later start's test client looks in hostplane's schema first).
 */
const backendTables = [
  "CREATE TABLE public.users (id serial PRIMARY KEY, email text NOT NULL UNIQUE)",
  "CREATE TABLE public.sessions (token text PRIMARY KEY, user_id int NOT NULL REFERENCES public.users (id))",
  "CREATE TABLE public.jobs (id bigserial PRIMARY KEY, name text NOT NULL, done boolean NOT NULL DEFAULT false)",
  "CREATE TABLE public.projects (id serial PRIMARY KEY, title text NOT NULL)",
  "CREATE TABLE public.orgs (id serial PRIMARY KEY, label text NOT NULL)",
  "INSERT INTO public.users (email) VALUES ('ada@example.com'), ('bob@example.com')",
  "INSERT INTO public.sessions VALUES ('host-session-1', 1)",
  "INSERT INTO public.jobs (name) VALUES ('nightly report')",
  "INSERT INTO public.projects (title) VALUES ('website')",
  "INSERT INTO public.orgs (label) VALUES ('acme')"
]

/**
 * decisions.md part 18's examples, each started and checked from outside over HTTP. The first starts as its comment
 * says (`node --conditions=@hostplane/source examples/embed/main.ts`) on a backend's database that has never seen
 * hostplane (its first start migrates hostplane's schema beside the backend's tables); the others, from their bundles,
 * on one where hostplane's schema is already migrated, as at a host's every later start: the migrations are the same
 * `makeHostplane` whatever the framework, and run once here instead of five times.
 */
describe.each([
  ["node:http", "examples/embed/main.ts", "", "first start"],
  ["Express", "examples/embed/express.ts", "/platform", "later start"],
  ["Hono", "examples/embed/hono.ts", "/platform", "later start"],
  ["Fastify", "examples/embed/fastify.ts", "/platform", "later start"],
  ["Koa", "examples/embed/koa.ts", "/platform", "later start"]
] as const)("the %s host (%s) on a backend's database (%s)", (_, file, prefix, start) => {
  // A later start's database is a copy of the run's migrated template: hostplane's schema and nothing else.
  const database = ManagedRuntime.make(start === "first start" ? TestDatabase.layerBare : TestDatabase.layer)
  const query = <A extends object>(text: string) =>
    database.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(text)))
  const snapshot = async () => ({
    rows: await Promise.all(
      ["users", "sessions", "jobs", "projects", "orgs"].map((table) => query(`TABLE public.${table} ORDER BY 1`))
    ),
    columns: await query(`SELECT table_name, column_name, data_type FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name <> 'host_users' ORDER BY 1, 2`)
  })
  let before: Awaited<ReturnType<typeof snapshot>>
  let child: ChildProcess | undefined
  let output = ""
  let base: string
  let dataDir: string

  beforeAll(async () => {
    for (const statement of backendTables) await query(statement)
    before = await snapshot()
    const { url } = await database.runPromise(Effect.service(TestDatabase))
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-example-"))
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    const command =
      start === "first start"
        ? ["--conditions=@hostplane/source", file]
        : [join(bundles, basename(file).replace(/\.ts$/u, ".mjs"))]
    child = spawn(process.execPath, command, {
      cwd: root,
      env: { ...process.env, DATABASE_URL: Redacted.value(url), PORT: String(port), SERVICE_DATA_DIR: dataDir },
      stdio: ["ignore", "pipe", "pipe"]
    })
    child.stdout!.on("data", (chunk) => (output += chunk))
    child.stderr!.on("data", (chunk) => (output += chunk))
    for (let i = 0; i < 480; i++) {
      if (child.exitCode !== null) break
      const up = await fetch(`${base}/`, { signal: AbortSignal.timeout(2_000) }).then(
        (reply) => reply.ok,
        () => false
      )
      if (up) return
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
    throw new Error(`${file} did not start:\n${output}`)
  })

  afterAll(async () => {
    if (child !== undefined && child.exitCode === null) {
      const exited = new Promise((resolve) => child!.once("exit", resolve))
      child.kill("SIGTERM")
      await exited
    }
    await database.dispose()
    rmSync(dataDir, { recursive: true, force: true })
  })

  const login = async (email: string) => {
    const reply = await fetch(`${base}/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email })
    })
    expect(reply.status).toBe(200)
    const cookie = reply.headers.get("set-cookie")!.split(";")[0]!
    expect(cookie).toMatch(/^host_session=/)
    return { cookie, user: (await reply.json()) as { id: number; email: string } }
  }

  it("serves its own page, and hostplane under its prefix", async () => {
    const page = await fetch(`${base}/`)
    expect(await page.text()).toContain("The host's own page")
    const index = await fetch(`${base}${prefix}/v1`)
    expect(index.status).toBe(200)
    if (prefix !== "") expect((await fetch(`${base}/v1/me`)).status).toBe(404)
  })

  it("its users sign in with POST /login and are hostplane users through the host_session cookie", async () => {
    expect((await fetch(`${base}${prefix}/v1/me`)).status).toBe(401)
    const ada = await login("ada@host.test")
    const me = await fetch(`${base}${prefix}/v1/me`, { headers: { cookie: ada.cookie } })
    expect(me.status).toBe(200)
    const body = (await me.json()) as {
      user: { id: string; provider: string; subject: string; email: string }
      orgs: Array<{ slug: string; personal: boolean }>
    }
    expect(body.user).toMatchObject({ provider: "host", subject: String(ada.user.id), email: "ada@host.test" })
    expect(body.orgs).toEqual([expect.objectContaining({ personal: true })])
    // The same host user again is the same hostplane user.
    const again = await login("ada@host.test")
    const second = (await (await fetch(`${base}${prefix}/v1/me`, { headers: { cookie: again.cookie } })).json()) as {
      user: { id: string }
    }
    expect(second.user.id).toBe(body.user.id)
    // A cookie it did not sign has no user behind it.
    const forged = await fetch(`${base}${prefix}/v1/me`, { headers: { cookie: `host_session=${ada.user.id}.forged` } })
    expect(forged.status).toBe(401)
    expect((await fetch(`${base}/login`, { method: "POST", body: "{}" })).status).toBe(400)
  })

  it("the host's users meet the API's rules: a project in one's own org, 404 in another's", async () => {
    const ada = await login("ada@host.test")
    const bob = await login("bob@host.test")
    const me = (await (await fetch(`${base}${prefix}/v1/me`, { headers: { cookie: ada.cookie } })).json()) as {
      orgs: Array<{ slug: string }>
    }
    const slug = me.orgs[0]!.slug
    const created = await fetch(`${base}${prefix}/v1/orgs/${slug}/projects`, {
      method: "POST",
      headers: { cookie: ada.cookie, "content-type": "application/json" },
      body: JSON.stringify({ name: "site" })
    })
    expect(created.status).toBe(201)
    const outsider = await fetch(`${base}${prefix}/v1/orgs/${slug}/projects/site`, { headers: { cookie: bob.cookie } })
    expect(outsider.status).toBe(404)
  })

  it("leaves the backend's tables and rows as they were; hostplane's are in its schema", async () => {
    expect(await snapshot()).toEqual(before)
    const hostplane = await query<{ count: string }>(
      "SELECT count(*)::text AS count FROM hostplane.users WHERE provider = 'host'"
    )
    expect(hostplane[0]?.count).toBe("2")
    const host = await query<{ count: string }>("SELECT count(*)::text AS count FROM public.host_users")
    expect(host[0]?.count).toBe("2")
    const strays = await query(`SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relname LIKE 'effect_sql_migrations%'`)
    expect(strays).toEqual([])
  })
})
