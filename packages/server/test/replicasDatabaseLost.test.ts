import { randomBytes } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { startS3rver } from "@hostplane/testkit"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type ServerProcess, signIn, startServer, stopServer } from "./support/ServerProcess.ts"
import { jobClaims, psql } from "./support/Probes.ts"

interface Replica {
  readonly base: string
  readonly metricsPort: number
  readonly dataDir: string
  readonly server: ServerProcess
  readonly home: string
}

/** The project clusters' postmasters of a replica's embedded node (they outlive a SIGKILLed server). */
const clusterPids = (dataDir: string): Array<number> => {
  const root = join(dataDir, "node", "db")
  if (!existsSync(root)) return []
  return readdirSync(root)
    .filter((name) => !name.startsWith("."))
    .map((name) => join(root, name, "data", "postmaster.pid"))
    .filter((file) => existsSync(file))
    .map((file) => Number.parseInt(readFileSync(file, "utf8").split("\n")[0] ?? "", 10))
    .filter((pid) => Number.isInteger(pid) && pid > 0)
}

/**
 * A database whose home replica is gone for good (decisions.md part 4's `restore`, part 15; docs/operations.md): once
 * the home has been silent for `SERVICE_DB_HOME_LOST_AFTER`, a live replica takes the database and rebuilds it from its
 * newest generation in the bucket, and the old home, started again on its old data, retires its stale cluster. The
 * work pinned to the lost home ends too: a restore in flight there fails and lets its database be rebuilt, a database
 * delete in flight is finished by the live replica, and a project delete's handed-over drain and removal are dropped
 * (the returning home retires the clusters nobody owns). Two servers as `npm start` runs them on one PostgreSQL, one
 * s3rver bucket and one seal key.
 */
describe("a database whose home replica is lost", () => {
  let directory: string
  const scope = Effect.runSync(Scope.make())
  let s3: Awaited<ReturnType<typeof startS3rver>>
  let controlUrl: string
  let shared: Record<string, string>
  let a: Replica | undefined
  let b: Replica | undefined

  const startReplica = async (name: string): Promise<Replica> => {
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const metricsPort = await freePort()
    const dataDir = join(directory, name)
    const server = await startServer(
      base,
      {
        ...shared,
        SERVICE_DATA_DIR: dataDir,
        SERVICE_LISTEN: `127.0.0.1:${port}`,
        SERVICE_EDGE_LISTEN: `127.0.0.1:${await freePort()}`,
        SERVICE_DNS_LISTEN: "off",
        SERVICE_METRICS_LISTEN: `127.0.0.1:${metricsPort}`
      },
      720
    )
    const home = readFileSync(join(dataDir, "node", "db", ".home"), "utf8").trim()
    return { base, metricsPort, dataDir, server, home }
  }

  /** The test's own connection to the control database: its polls run a statement a second, no psql process each. */
  let controlClient: pg.Client | undefined

  /** One statement against the control database, its rows as `psql -At` prints them (a line each, `|` between). */
  const control = async (command: string) => {
    const result = await controlClient!.query<Array<unknown>>({ text: command, rowMode: "array" })
    return result.rows.map((row) => row.map((value) => (value === null ? "" : String(value))).join("|")).join("\n")
  }

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), "hostplane-replicas-lost-"))
    chmodSync(directory, 0o755)
    mkdirSync(join(directory, "git"))
    // A migrated database of the run's test server (a copy of its template), dropped when the scope closes: the
    // replicas' PostgreSQL, with no cluster of its own to start and no migrations left for the first replica to run.
    const database = await Effect.runPromise(
      Effect.map(Layer.buildWithScope(TestDatabase.layer, scope), (context) => Context.get(context, TestDatabase))
    )
    controlUrl = Redacted.value(database.url)
    controlClient = new pg.Client({ connectionString: controlUrl })
    await controlClient.connect()
    s3 = await startS3rver()
    shared = {
      DATABASE_URL: controlUrl,
      SERVICE_SEAL_KEY: randomBytes(32).toString("base64"),
      SERVICE_GIT_DIR: join(directory, "git"),
      SERVICE_ENABLE_DEV_AUTH: "true",
      SERVICE_WORKERS: "off",
      SERVICE_S3_URL: s3.url,
      SERVICE_S3_ACCESS_KEY_ID: s3.accessKeyId,
      SERVICE_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      SERVICE_DB_BACKUP_INTERVAL: "15 seconds",
      // A home's generations round renews its sign of life every 2 s (its lease covers a round that runs long); 10 s
      // of silence leaves room for a load. The live replica looks for lost homes at the same pace.
      SERVICE_DB_ROUND_EVERY: "2 seconds",
      SERVICE_DB_HOME_LOST_AFTER: "10 seconds",
      // A restore's or a delete's sealing phase held open: those operations are still in flight when their home dies.
      SERVICE_DB_TEST_SEALING_DELAY: "30 minutes"
    }
    a = await startReplica("a")
    b = await startReplica("b")
  }, 480_000)

  afterAll(async () => {
    // A replica killed by the test has exited already: only the running ones are stopped.
    const running = [a, b].filter((r) => r !== undefined && r.server.child.signalCode === null)
    await Promise.all(running.map((r) => stopServer(r!.server.child, "SIGTERM")))
    await s3?.close()
    await controlClient?.end()
    await Effect.runPromise(Scope.close(scope, Exit.void))
    rmSync(directory, { recursive: true, force: true })
  }, 90_000)

  it("is rebuilt on the live replica from its newest generation, the lost home's work ends, and the home retires its stale clusters", async () => {
    const onA = await signIn(a!.base, "db-lost-owner")
    const onB = await signIn(b!.base, "db-lost-owner")
    const slug = (await onA.call("GET", "/v1/me")).body.orgs[0].slug as string
    const created = await onA.call("POST", `/v1/orgs/${slug}/projects`, { name: "alpha" })
    expect(created.status).toBe(201)
    const alphaId = created.body.id as string
    const alpha = `/v1/orgs/${slug}/projects/alpha/database`
    const clusterOn = (replica: Replica, projectId: string) =>
      existsSync(join(replica.dataDir, "node", "db", projectId, "data", "PG_VERSION"))

    const onHome = await onA.call("POST", alpha)
    expect(onHome.status, JSON.stringify(onHome.body)).toBe(200)
    expect((await psql(onHome.body, "create table kept (n int); insert into kept values (7)")).ok).toBe(true)
    // beta (a restore in flight at the kill), gamma (a database delete in flight) and delta (a project deleted while A
    // is down), all on A. gamma and delta are made once the scheduled generations below are taken: they need none but
    // their baseline, and each database on A until the kill is one more generation at every grid boundary.
    // delta lives in a second org: a free org holds three projects.
    const orgOf = (name: string) => (name === "delta" ? "lost-other" : slug)
    const others: Record<string, { readonly id: string; readonly path: string }> = {}
    const makeOnA = async (name: string) => {
      const project = await onA.call("POST", `/v1/orgs/${orgOf(name)}/projects`, { name })
      expect(project.status, JSON.stringify(project.body)).toBe(201)
      const path = `/v1/orgs/${orgOf(name)}/projects/${name}/database`
      const made = await onA.call("POST", path)
      expect(made.status, JSON.stringify(made.body)).toBe(200)
      others[name] = { id: project.body.id as string, path }
      return made.body
    }
    const betaDb = await makeOnA("beta")
    expect((await psql(betaDb, "create table kept (n int); insert into kept values (8)")).ok).toBe(true)
    const written = Date.now()
    const token = await onA.call("POST", `${alpha}/tokens`, {})
    expect(token.status, JSON.stringify(token.body)).toBe(201)

    // A scheduled generation taken after the writes: what the rebuilds start from.
    const generationsOf = async (path: string) =>
      (await onB.call("GET", `${path}/generations`)).body.items as Array<{
        epoch: number
        seq: number
        createdAt: string
      }>
    const generations = () => generationsOf(alpha)
    for (const path of [alpha, others.beta!.path]) {
      await expect
        .poll(async () => (await generationsOf(path)).some((g) => Date.parse(g.createdAt) > written + 1_000), {
          timeout: 120_000,
          interval: 1_000
        })
        .toBe(true)
    }

    expect((await onA.call("POST", "/v1/orgs", { name: "Lost other", slug: "lost-other" })).status).toBe(201)
    for (const name of ["gamma", "delta"]) await makeOnA(name)

    // beta's restore and gamma's delete, asked of B, run on A and stop in their sealing phase (held open).
    const restore = await onB.call("POST", `${others.beta!.path}/restore`, { epoch: 1, seq: 1 })
    expect(restore.status, JSON.stringify(restore.body)).toBe(202)
    const dropped = await onB.call("POST", `${others.gamma!.path}/delete`, { confirm: "gamma" })
    expect(dropped.status, JSON.stringify(dropped.body)).toBe(202)
    const operationOf = async (name: string, opId: string) =>
      (await onB.call("GET", `${others[name]!.path}/operations/${opId}`)).body
    for (const [name, opId] of [
      ["beta", restore.body.operationId],
      ["gamma", dropped.body.operationId]
    ] as const) {
      await expect
        .poll(async () => (await operationOf(name, opId)).phase, { timeout: 120_000, interval: 500 })
        .toBe("sealing")
    }

    // The epochs alpha's generations ran on while A held it: its rebuild must run above every one of them.
    const epochsOnA = (await generations()).map((g) => g.epoch)

    // A's machine is gone: the server and its project clusters die at once.
    const lostHome = a!.home
    await stopServer(a!.server.child, "SIGKILL")
    for (const pid of clusterPids(a!.dataDir)) process.kill(pid, "SIGKILL")
    expect((await psql(onHome.body, "select 1")).ok).toBe(false)

    // delta's project is deleted through B meanwhile: its drain and cluster removal are handed to A, which is gone.
    const projectDelete = await onB.call("DELETE", "/v1/orgs/lost-other/projects/delta", { confirm: "delta" })
    expect(projectDelete.status).toBe(202)
    await expect
      .poll(
        async () => (await onB.call("GET", `/v1/orgs/lost-other/operations/${projectDelete.body.operationId}`)).body,
        {
          timeout: 120_000,
          interval: 500
        }
      )
      .toMatchObject({ terminalCode: "done" })
    const handedOver = `FROM hostplane.jobs WHERE kind = 'database_node@${lostHome}' AND payload->>'projectId' = '${others.delta!.id}'`
    expect(Number(await control(`SELECT count(*) ${handedOver}`))).toBeGreaterThan(0)

    // B takes alpha once A has been silent past SERVICE_DB_HOME_LOST_AFTER, and serves it from its own node.
    await expect
      .poll(
        async () => {
          const endpoint = await onB.call("GET", `${alpha}/endpoint`)
          return endpoint.status === 200 && endpoint.body.port !== onHome.body.port
        },
        { timeout: 180_000, interval: 1_000 }
      )
      .toBe(true)
    expect(clusterOn(b!, alphaId)).toBe(true)
    const operationId = await control(
      `SELECT id FROM hostplane.jobs WHERE kind = 'restore@${b!.home}' AND payload->>'projectId' = '${alphaId}'`
    )
    expect(operationId).toMatch(/^op_/)
    const operation = async () => (await onB.call("GET", `${alpha}/operations/${operationId}`)).body
    await expect.poll(async () => (await operation()).terminalCode, { timeout: 120_000, interval: 500 }).toBe("done")
    expect(await operation()).toMatchObject({ kind: "restore", phase: "reactivation", projectId: alphaId })
    const abort = await onB.call("POST", `${alpha}/operations/${operationId}/abort`)
    expect(abort.status).toBe(409)
    expect(abort.body.code).toBe("not_abortable")
    expect(b!.server.output()).toContain("a database home is lost")
    expect(await control(`SELECT home FROM hostplane.databases WHERE project_id = '${alphaId}'`)).toBe(b!.home)

    // The rows written before the generation are back, under the same password, and the token still connects.
    const moved = await onB.call("GET", `${alpha}/connect`)
    expect(moved.status).toBe(200)
    expect(moved.body.password).toBe(onHome.body.password)
    expect(await psql(moved.body, "select n from kept")).toEqual({ ok: true, out: "7" })
    expect(await psql({ ...moved.body, user: token.body.user, password: token.body.password }, "select 1")).toEqual({
      ok: true,
      out: "1"
    })
    // The database runs on a new epoch above every one it had, and B now takes its generations (B's first one may
    // come before this line runs: the epochs are those listed before the kill).
    await expect
      .poll(async () => Math.max(...(await generations()).map((g) => g.epoch)), { timeout: 90_000, interval: 1_000 })
      .toBeGreaterThan(Math.max(...epochsOnA))
    expect((await jobClaims(b!.metricsPort)).get(`database_generations@${b!.home}`) ?? 0).toBeGreaterThan(0)
    // The admins are told what was lost.
    expect(
      await control(
        `SELECT count(*) FROM hostplane.notifications WHERE message LIKE '%database of project alpha stopped answering, so the database was rebuilt%'`
      )
    ).toBe("1")

    // beta's restore, pinned to A, fails with the reason; its hold goes, and beta is rebuilt on B from its newest
    // generation like alpha.
    await expect
      .poll(async () => (await operationOf("beta", restore.body.operationId)).terminalCode, {
        timeout: 120_000,
        interval: 500
      })
      .toBe("failed")
    expect(await operationOf("beta", restore.body.operationId)).toMatchObject({
      kind: "restore_generation",
      phase: "sealing"
    })
    expect(await control(`SELECT last_error FROM hostplane.jobs WHERE id = '${restore.body.operationId}'`)).toContain(
      `its replica ${lostHome} has not answered`
    )
    const betaRebuild = async () =>
      await control(
        `SELECT terminal_code FROM hostplane.jobs WHERE kind = 'restore@${b!.home}' AND payload->>'projectId' = '${others.beta!.id}'`
      )
    await expect.poll(betaRebuild, { timeout: 180_000, interval: 1_000 }).toBe("done")
    expect(
      await control(
        `SELECT home || '|' || coalesce(operation_id, '') FROM hostplane.databases WHERE project_id = '${others.beta!.id}'`
      )
    ).toBe(`${b!.home}|`)
    const betaMoved = await onB.call("GET", `${others.beta!.path}/connect`)
    expect(betaMoved.status).toBe(200)
    expect(await psql(betaMoved.body, "select n from kept")).toEqual({ ok: true, out: "8" })

    // gamma's delete, pinned to A, is finished by B: the database is gone, its generations stay listed.
    await expect
      .poll(async () => (await operationOf("gamma", dropped.body.operationId)).terminalCode, {
        timeout: 120_000,
        interval: 500
      })
      .toBe("done")
    expect((await onB.call("GET", others.gamma!.path)).body).toEqual({ db: false })
    expect((await generationsOf(others.gamma!.path)).length).toBeGreaterThan(0)
    expect(b!.server.output()).toContain("an operation pinned to a lost database home is ended here")

    // delta's handed-over work is ended by B with the reason: nothing pinned to A stays unfinished.
    await expect
      .poll(async () => await control(`SELECT count(*) ${handedOver} AND terminal_code IS NULL`), {
        timeout: 120_000,
        interval: 1_000
      })
      .toBe("0")
    expect(await control(`SELECT DISTINCT terminal_code || ': ' || left(last_error, 8) ${handedOver}`)).toBe(
      "failed: not run:"
    )
    expect(b!.server.output()).toContain("database work handed to a lost home is dropped")
    expect(
      await control(
        `SELECT count(*) FROM hostplane.jobs WHERE starts_with(kind, 'database_node@${lostHome}') AND terminal_code IS NULL`
      )
    ).toBe("0")
    // The admins are told what became of each operation, once.
    expect(
      await control(
        `SELECT count(*) FROM hostplane.notifications WHERE message LIKE '%restore of the database of project beta could not finish: the replica running it stopped answering%'`
      )
    ).toBe("1")
    expect(
      await control(
        `SELECT count(*) FROM hostplane.notifications WHERE message LIKE '%database of project gamma was deleted. The replica holding it stopped answering%'`
      )
    ).toBe("1")

    // A comes back on its old data (same home): its stale copies of alpha and beta go to the tombstone, and so do
    // gamma's and delta's clusters, which no record owns any more; B keeps serving. None of them is started again on
    // the way: a client still holding A's old endpoint is refused from A's first moment, never served old data.
    const restartedAt = Date.now()
    a = await startReplica("a")
    expect(a.home).toBe(lostHome)
    expect((await psql(onHome.body, "select 1")).ok).toBe(false)
    const retired = [alphaId, others.beta!.id, others.gamma!.id, others.delta!.id]
    for (const projectId of retired) {
      await expect.poll(() => clusterOn(a!, projectId), { timeout: 90_000, interval: 500 }).toBe(false)
    }
    // PostgreSQL writes postmaster.opts at each start of a cluster: the tombstone's copies were last started before.
    const tombstone = join(a.dataDir, "node", "db", ".tombstone")
    for (const projectId of retired) {
      const copies = readdirSync(tombstone).filter((name) => name.startsWith(`${projectId}-`))
      expect(copies.length, projectId).toBeGreaterThan(0)
      for (const copy of copies) {
        expect(statSync(join(tombstone, copy, "data", "postmaster.opts")).mtimeMs, projectId).toBeLessThan(restartedAt)
      }
    }
    expect(a.server.output()).toContain("a database moved to another replica while this one was away")
    expect(a.server.output()).toContain("a database cluster here has no record any more")
    expect(await psql(moved.body, "select n from kept")).toEqual({ ok: true, out: "7" })
    expect(await control(`SELECT home FROM hostplane.databases WHERE project_id = '${alphaId}'`)).toBe(b!.home)
  }, 900_000)
})
