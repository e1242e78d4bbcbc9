import { randomBytes } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { startS3rver } from "@hostplane/testkit"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type ServerProcess, signIn, startServer, stopServer } from "./support/ServerProcess.ts"
import { jobClaims, psql } from "./support/Probes.ts"

/** The kinds a replica ran whose name ends with `@<home>` or any other home, with their counts. */
const pinnedKinds = (claims: Map<string, number>) => [...claims.keys()].filter((kind) => kind.includes("@")).sort()

interface Replica {
  readonly name: string
  readonly base: string
  readonly metricsPort: number
  readonly dataDir: string
  readonly server: ServerProcess
  /** The node's home, as it keeps it under its clusters' folder. */
  readonly home: string
}

/**
 * The database add-on's embedded node on two replicas (decisions.md part 15, docs/operations.md): each replica's
 * clusters live on its own machine, so a database is homed on the replica that created it and the work that needs its
 * cluster runs there, whichever replica a request or a job reached. Two servers as `npm start` runs them, on one
 * PostgreSQL, one S3 bucket (s3rver: the generations) and one seal key, each with its own data directory.
 */
describe("the database add-on on two replicas", () => {
  let directory: string
  const scope = Effect.runSync(Scope.make())
  let s3: Awaited<ReturnType<typeof startS3rver>>
  let a: Replica
  let b: Replica

  const startReplica = async (name: string, shared: Record<string, string>): Promise<Replica> => {
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
    return { name, base, metricsPort, dataDir, server, home }
  }

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), "hostplane-replicas-db-"))
    chmodSync(directory, 0o755)
    mkdirSync(join(directory, "git"))
    // A migrated database of the run's test server (a copy of its template), dropped when the scope closes: the
    // replicas' PostgreSQL, with no cluster of its own to start and no migrations left for the first replica to run.
    const database = await Effect.runPromise(
      Effect.map(Layer.buildWithScope(TestDatabase.layer, scope), (context) => Context.get(context, TestDatabase))
    )
    s3 = await startS3rver()
    const shared = {
      DATABASE_URL: Redacted.value(database.url),
      SERVICE_SEAL_KEY: randomBytes(32).toString("base64"),
      SERVICE_GIT_DIR: join(directory, "git"),
      SERVICE_ENABLE_DEV_AUTH: "true",
      SERVICE_WORKERS: "off",
      SERVICE_S3_URL: s3.url,
      SERVICE_S3_ACCESS_KEY_ID: s3.accessKeyId,
      SERVICE_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      // A grid boundary every 20 s: each database gets scheduled generations during the test.
      SERVICE_DB_BACKUP_INTERVAL: "20 seconds"
    }
    // One after the other: two starts at once share the 2 loaded cores.
    a = await startReplica("a", shared)
    b = await startReplica("b", shared)
  }, 480_000)

  afterAll(async () => {
    await Promise.all([a, b].filter((r) => r !== undefined).map((r) => stopServer(r.server.child, "SIGTERM")))
    await s3?.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
    rmSync(directory, { recursive: true, force: true })
  }, 90_000)

  it("a database lives on the replica that made it; the other answers for it and hands its cluster's work over", async () => {
    expect(a.home).toMatch(/^node_[0-9a-f]{16}$/)
    expect(b.home).toMatch(/^node_[0-9a-f]{16}$/)
    expect(a.home).not.toBe(b.home)
    const onA = await signIn(a.base, "db-replicas-owner")
    const onB = await signIn(b.base, "db-replicas-owner")
    const slug = (await onA.call("GET", "/v1/me")).body.orgs[0].slug as string
    const project = async (name: string) => {
      const created = await onA.call("POST", `/v1/orgs/${slug}/projects`, { name })
      expect(created.status).toBe(201)
      return created.body.id as string
    }
    const alphaId = await project("alpha")
    const betaId = await project("beta")
    const alpha = `/v1/orgs/${slug}/projects/alpha/database`
    const beta = `/v1/orgs/${slug}/projects/beta/database`
    const clusterOn = (replica: Replica, projectId: string) =>
      existsSync(join(replica.dataDir, "node", "db", projectId, "data", "PG_VERSION"))

    // alpha is made on A, beta on B: each cluster on its own replica only.
    const alphaDb = await onA.call("POST", alpha)
    expect(alphaDb.status, JSON.stringify(alphaDb.body)).toBe(200)
    const betaDb = await onB.call("POST", beta)
    expect(betaDb.status, JSON.stringify(betaDb.body)).toBe(200)
    expect([clusterOn(a, alphaId), clusterOn(b, alphaId)]).toEqual([true, false])
    expect([clusterOn(a, betaId), clusterOn(b, betaId)]).toEqual([false, true])
    expect(await psql(alphaDb.body, "select 1")).toEqual({ ok: true, out: "1" })
    expect((await psql(alphaDb.body, "create table kept (n int); insert into kept values (7)")).ok).toBe(true)

    // B answers for alpha from what A recorded, and a repeated create there makes no second cluster.
    const endpointOnB = await onB.call("GET", `${alpha}/endpoint`)
    expect(endpointOnB).toEqual({
      status: 200,
      body: { host: alphaDb.body.host, port: alphaDb.body.port, database: "app", sslmode: "require" }
    })
    const againOnB = await onB.call("POST", alpha)
    expect(againOnB.status).toBe(200)
    expect(againOnB.body).toEqual(alphaDb.body)
    expect(clusterOn(b, alphaId)).toBe(false)

    // A token made through B is made in alpha's cluster on A; deleted through B, it no longer connects.
    const token = await onB.call("POST", `${alpha}/tokens`, {})
    expect(token.status, JSON.stringify(token.body)).toBe(201)
    const asToken = { ...alphaDb.body, user: token.body.user, password: token.body.password }
    expect(await psql(asToken, "select n from kept")).toEqual({ ok: true, out: "7" })
    expect((await onB.call("DELETE", `${alpha}/tokens/${token.body.user}`)).status).toBe(204)
    expect((await psql(asToken, "select 1")).ok).toBe(false)

    // An export asked of B is taken by A (the image lands in the bucket).
    const exported = await onB.call("POST", `${alpha}/export`)
    expect(exported.status, JSON.stringify(exported.body)).toBe(200)
    expect(exported.body.key).toMatch(new RegExp(`^exports/${alphaId}/`))

    // Scheduled generations: each replica takes its own databases' (the baseline, then at least one more).
    const generations = async (path: string) =>
      ((await onA.call("GET", `${path}/generations`)).body.items as Array<{ epoch: number; seq: number }>).length
    await expect.poll(() => generations(alpha), { timeout: 90_000, interval: 1_000 }).toBeGreaterThanOrEqual(2)
    await expect.poll(() => generations(beta), { timeout: 90_000, interval: 1_000 }).toBeGreaterThanOrEqual(2)
    const claimsA = await jobClaims(a.metricsPort)
    const claimsB = await jobClaims(b.metricsPort)
    expect(claimsA.get(`database_generations@${a.home}`) ?? 0).toBeGreaterThan(0)
    expect(claimsB.get(`database_generations@${b.home}`) ?? 0).toBeGreaterThan(0)
    // No replica ran a kind pinned to the other one's home.
    expect(pinnedKinds(claimsA).every((kind) => kind.endsWith(`@${a.home}`))).toBe(true)
    expect(pinnedKinds(claimsB).every((kind) => kind.endsWith(`@${b.home}`))).toBe(true)
    // A generation attempted where the cluster is not fails and is told; none did.
    for (const replica of [a, b]) expect(replica.server.output()).not.toContain("a scheduled generation failed")

    // A restore asked of B runs on A, where alpha's cluster is: the table made after the baseline is gone.
    const restore = await onB.call("POST", `${alpha}/restore`, { epoch: 1, seq: 1 })
    expect(restore.status, JSON.stringify(restore.body)).toBe(202)
    const operation = async () => (await onB.call("GET", `${alpha}/operations/${restore.body.operationId}`)).body
    await expect.poll(async () => (await operation()).terminalCode, { timeout: 120_000, interval: 500 }).toBe("done")
    expect(await operation()).toMatchObject({ kind: "restore_generation", phase: "reactivation" })
    expect(await psql(alphaDb.body, "select to_regclass('kept') is null")).toEqual({ ok: true, out: "t" })
    expect((await jobClaims(a.metricsPort)).get(`restore_generation@${a.home}`) ?? 0).toBeGreaterThan(0)

    // alpha's project deleted through B: A stops its cluster and moves it to the tombstone.
    const deleted = await onB.call("DELETE", `/v1/orgs/${slug}/projects/alpha`, { confirm: "alpha" })
    expect(deleted.status).toBe(202)
    await expect
      .poll(async () => (await onB.call("GET", `/v1/orgs/${slug}/operations/${deleted.body.operationId}`)).body, {
        timeout: 120_000,
        interval: 500
      })
      .toMatchObject({ terminalCode: "done" })
    await expect.poll(() => clusterOn(a, alphaId), { timeout: 60_000, interval: 500 }).toBe(false)
    expect((await psql(alphaDb.body, "select 1")).ok).toBe(false)
    // beta, on B, is untouched.
    expect(await psql(betaDb.body, "select 1")).toEqual({ ok: true, out: "1" })
  }, 600_000)
})
