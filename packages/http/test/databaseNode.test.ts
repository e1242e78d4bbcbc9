import { PgClient } from "@effect/sql-pg"
import * as Pg from "@hostplane/adapters-pg"
import { BackupStoreDisk } from "@hostplane/adapters-providers"
import { Database, Jobs } from "@hostplane/core"
import { Duration, Effect, Fiber, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { execSmall } from "./support/SmallSpawner.ts"
import { type Served, useSuite } from "./support/TestServer.ts"

const folder = mkdtempSync(Path.join(Os.tmpdir(), "hostplane-http-node-"))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

interface Connect {
  readonly host: string
  readonly port: number
  readonly user: string
  readonly password: string
}

/** The real psql, as a user of the database runs it. */
const psql = async (at: Connect, command: string, as: { user: string; password: string } = at) => {
  const { code, stdout, stderr } = await execSmall(
    "psql",
    ["-h", at.host, "-p", String(at.port), "-U", as.user, "-d", "app", "-XAtqc", command],
    { env: { ...process.env, PGPASSWORD: as.password, PGCONNECT_TIMEOUT: "10" } }
  )
  return { ok: code === 0, out: code === 0 ? stdout.trim() : stderr }
}

const slow = 240_000

/** The node's certificate authority, where the node keeps it (`<node folder>/.tls/ca.crt`). */
const authorityFile = Path.join(folder, "node", ".tls", "ca.crt")

/** psql on a whole connection URL or conninfo string, as `psql "$url"` runs. */
const psqlOn = async (conninfo: string, command: string) => {
  const { code, stdout, stderr } = await execSmall("psql", [conninfo, "-XAtqc", command], {
    env: { ...process.env, PGCONNECT_TIMEOUT: "10" }
  })
  return { ok: code === 0, out: code === 0 ? stdout.trim() : stderr }
}

/**
 * A Node driver (@effect/sql-pg) on a connection URL, as an application would use it; `sslmode=require` in the URL
 * verifies the server there, so the application trusts the node's authority.
 */
const driver = <A>(url: string, use: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(
    Effect.flatMap(Effect.service(SqlClient.SqlClient), use).pipe(
      Effect.provide(
        PgClient.layer({ url: Redacted.make(url), ssl: { ca: readFileSync(authorityFile, "utf8") }, maxConnections: 1 })
      ),
      Effect.scoped
    ) as Effect.Effect<A, unknown>
  )

describe("spec 4.6 database on real PostgreSQL clusters, through HTTP and psql", () => {
  const suite = useSuite(backends[0]![1], { database: { backupInterval: Duration.seconds(1) } }, undefined, undefined, {
    providers: [
      Layer.mergeAll(
        Pg.DatabaseNodeEmbedded.layer({ directory: Path.join(folder, "node"), durable: false }),
        BackupStoreDisk.layer(Path.join(folder, "backups"))
      )
    ]
  })
  const { api, newOrg, newProject } = suite
  const admin = () => ({ token: suite.admin.token })
  const withDatabases = <A>(use: (databases: Database.Databases["Service"]) => Effect.Effect<A, never, Served>) =>
    suite.server.run(Effect.flatMap(Effect.service(Database.Databases), use))
  const runner = (databases: Database.Databases["Service"]) =>
    Jobs.JobRunner.runOnce(databases.handlers.map((handler) => Effect.succeed(handler)))
  const runOperations = () => withDatabases(runner)
  /** A generation now: the grid is one second, so waiting past a boundary makes one due. */
  const generationNow = async () => {
    await new Promise((resolve) => setTimeout(resolve, 1100))
    await withDatabases((databases) => databases.backupDue)
  }
  const pairs = (items: ReadonlyArray<{ epoch: number; seq: number }>) => items.map((g) => [g.epoch, g.seq])

  const created = async () => {
    const slug = await newOrg()
    const project = (await newProject(slug)).name
    const base = `/v1/orgs/${slug}/projects/${project}/database`
    const connect = await api.post(base, undefined, admin())
    expect(connect.status).toBe(200)
    return { slug, project, base, db: connect.body as Connect & { url: string } }
  }
  /**
   * One database for the tests that neither restore nor delete it, made by the first of them: a cluster and its
   * baseline generation are most of such a test's time. Each test's tables and tokens are its own.
   */
  let kept: ReturnType<typeof created> | undefined
  const shared = () => (kept ??= created())

  it(
    "a token connects with psql and runs as the project role; deleted, it is refused; a restore brings back exactly the generation's rows",
    async () => {
      const { base, db } = await created()
      expect(await psql(db, "create table notes (n int); insert into notes select generate_series(1, 100)")).toEqual({
        ok: true,
        out: ""
      })
      const token = (await api.post(`${base}/tokens`, {}, admin())).body
      expect(await psql(db, "select current_user || ' ' || session_user", token)).toEqual({
        ok: true,
        out: `${db.user} ${token.user}`
      })
      expect((await psql(db, "insert into notes values (101)", token)).ok).toBe(true)
      await generationNow()
      const listed = (await api.get(`${base}/generations`, admin())).body.items
      expect(pairs(listed)).toEqual([
        [1, 2],
        [1, 1]
      ])
      // Written after the generation: gone after the restore.
      expect((await psql(db, "insert into notes values (999); delete from notes where n <= 50")).ok).toBe(true)
      const started = await api.post(`${base}/restore`, { epoch: 1, seq: 2 }, admin())
      expect(started.status).toBe(202)
      await runOperations()
      const done = await api.get(`${base}/operations/${started.body.operationId}`, admin())
      expect(done.body).toMatchObject({ phase: "reactivation", terminalCode: "done" })
      expect(await psql(db, "select count(*), min(n), max(n) from notes")).toEqual({ ok: true, out: "101|1|101" })
      // The token made before the generation still works; the sealing phase kept the pre-restore state.
      expect((await psql(db, "select 1", token)).ok).toBe(true)
      expect(pairs((await api.get(`${base}/generations`, admin())).body.items)).toEqual([
        [1, 3],
        [1, 2],
        [1, 1]
      ])
      // The next generation is on the new epoch.
      await generationNow()
      expect(pairs((await api.get(`${base}/generations`, admin())).body.items)[0]).toEqual([2, 1])
      expect((await api.delete(`${base}/tokens/${token.user}`, undefined, admin())).status).toBe(204)
      const refused = await psql(db, "select 1", token)
      expect(refused.ok).toBe(false)
    },
    slow
  )

  it(
    "connections are TLS: the url's sslmode=require works with psql as it is, verify-full with the node's authority checks the certificate",
    async () => {
      const { base, db } = await shared()
      expect(db.url).toMatch(/\?sslmode=require$/)
      expect((await api.get(`${base}/endpoint`, admin())).body.sslmode).toBe("require")
      const tls = "select ssl from pg_stat_ssl where pid = pg_backend_pid()"
      expect(await psqlOn(db.url, tls)).toEqual({ ok: true, out: "t" })
      const verified = db.url.replace("sslmode=require", `sslmode=verify-full&sslrootcert=${authorityFile}`)
      expect(await psqlOn(verified, tls)).toEqual({ ok: true, out: "t" })
      // Without TLS the project role has no way in.
      const plain = await psqlOn(db.url.replace("sslmode=require", "sslmode=disable"), "select 1")
      expect(plain.ok).toBe(false)
      expect(plain.out).toContain("no encryption")
      const token = (await api.post(`${base}/tokens`, {}, admin())).body
      const tokenUrl = `postgres://${token.user}:${encodeURIComponent(token.password)}@${db.host}:${db.port}/app?sslmode=verify-full&sslrootcert=${authorityFile}`
      // The token's session runs as the project role, which may not read the token's own backend row.
      expect(await psqlOn(tokenUrl, `set role none; ${tls}`)).toEqual({ ok: true, out: "t" })
    },
    slow
  )

  it(
    "the connect url works with a Node driver: the owner and a token write, each reads the other's rows",
    async () => {
      const { base, db } = await shared()
      const owned = await driver(db.url, (sql) =>
        Effect.gen(function* () {
          yield* sql`create table visits (who text)`
          yield* sql`insert into visits values ('owner')`
          return yield* sql<{ user: string }>`select current_user as user`
        })
      )
      expect(owned).toEqual([{ user: db.user }])
      const token = (await api.post(`${base}/tokens`, {}, admin())).body
      const tokenUrl = `postgres://${token.user}:${encodeURIComponent(token.password)}@${db.host}:${db.port}/app?sslmode=${db.url.split("sslmode=")[1]}`
      const rows = await driver(tokenUrl, (sql) =>
        Effect.gen(function* () {
          yield* sql`insert into visits values ('token')`
          return yield* sql<{ who: string }>`select who from visits order by who`
        })
      )
      expect(rows).toEqual([{ who: "owner" }, { who: "token" }])
      expect(await psql(db, "select count(*) from visits")).toEqual({ ok: true, out: "2" })
    },
    slow
  )

  it(
    "a restore aborted before committing changes nothing and the database keeps taking writes",
    async () => {
      const { base, db } = await shared()
      expect((await psql(db, "create table kept (n int); insert into kept values (1)")).ok).toBe(true)
      const started = await api.post(`${base}/restore`, { epoch: 1, seq: 1 }, admin())
      const aborted = await api.post(`${base}/operations/${started.body.operationId}/abort`, undefined, admin())
      expect(aborted.status).toBe(200)
      await runOperations()
      expect((await api.get(`${base}/operations/${started.body.operationId}`, admin())).body).toMatchObject({
        terminalCode: "aborted"
      })
      expect((await psql(db, "insert into kept values (2); select count(*) from kept")).out).toBe("2")
    },
    slow
  )

  it(
    "a restore interrupted in its sealing phase resumes there with the next runner and completes",
    async () => {
      const { base, db } = await created()
      expect((await psql(db, "create table t (n int); insert into t values (1)")).ok).toBe(true)
      const started = await api.post(`${base}/restore`, { epoch: 1, seq: 1 }, admin())
      const phaseOf = async () => (await api.get(`${base}/operations/${started.body.operationId}`, admin())).body
      // The first runner is stopped while the operation is sealing, as a crash would stop it.
      const stoppedAt = await withDatabases((databases) =>
        Effect.gen(function* () {
          const jobs = yield* Jobs.Jobs
          const phase = Effect.map(jobs.get(started.body.operationId), (job) => Option.getOrUndefined(job)?.phase)
          const first = yield* Effect.forkChild(runner(databases))
          while ((yield* phase) !== "sealing") yield* Effect.sleep("20 millis")
          yield* Fiber.interrupt(first)
          return yield* phase
        })
      )
      expect(stoppedAt).toBe("sealing")
      await runOperations()
      expect(await phaseOf()).toMatchObject({ phase: "reactivation", terminalCode: "done" })
      expect(await psql(db, "select to_regclass('t') is null")).toEqual({ ok: true, out: "t" })
    },
    slow
  )

  it(
    "delete drops the database and keeps the final safety generation listed",
    async () => {
      const { base, project, db } = await created()
      const started = await api.post(`${base}/delete`, { confirm: project }, admin())
      await runOperations()
      expect((await api.get(`${base}/operations/${started.body.operationId}`, admin())).body).toMatchObject({
        phase: "committing",
        terminalCode: "done"
      })
      expect((await api.get(base, admin())).body).toEqual({ db: false })
      expect(pairs((await api.get(`${base}/generations`, admin())).body.items)).toEqual([
        [1, 2],
        [1, 1]
      ])
      expect((await psql(db, "select 1")).ok).toBe(false)
    },
    slow
  )
})
