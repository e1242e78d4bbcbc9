import { EmbeddedPostgres } from "@hostplane/adapters-pg"
import { FakeSmtpServer } from "@hostplane/testkit"
import { Effect, Exit, Redacted, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type ServerProcess, signIn, startServer, stopServer } from "./support/ServerProcess.ts"

interface Replica {
  readonly name: string
  readonly base: string
  readonly server: ServerProcess
  readonly smtp: FakeSmtpServer["Service"]
}

/** Polls `check` until it is true, answering how long it took; fails after `deadlineMs` (a loaded machine is slow). */
const until = async (check: () => Promise<boolean>, deadlineMs: number, what: string) => {
  const started = performance.now()
  while (!(await check())) {
    if (performance.now() - started > deadlineMs) throw new Error(`${what}: not within ${deadlineMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return Math.round(performance.now() - started)
}

const status = (url: string, headers: Record<string, string>) =>
  fetch(url, { headers }).then(async (reply) => (await reply.arrayBuffer(), reply.status))

/**
 * Two servers (the binary, as `npm start` runs it) on one PostgreSQL started by the test, one shared git folder and
 * one seal key, each with its own data directory, ports and SMTP server (decisions.md part 15).
 */
describe("two replicas on one PostgreSQL", () => {
  let directory: string
  const scope = Effect.runSync(Scope.make())
  let url: string
  let a: Replica
  let b: Replica

  const startReplica = async (name: string, smtp: FakeSmtpServer["Service"], shared: Record<string, string>) => {
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const server = await startServer(base, {
      ...shared,
      SERVICE_DATA_DIR: join(directory, name),
      SERVICE_LISTEN: `127.0.0.1:${port}`,
      SERVICE_EDGE_LISTEN: `127.0.0.1:${await freePort()}`,
      SERVICE_SMTP_URL: smtp.url
    })
    return { name, base, server, smtp }
  }

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), "hostplane-replicas-"))
    chmodSync(directory, 0o755)
    mkdirSync(join(directory, "git"))
    const postgres = await Effect.runPromise(
      EmbeddedPostgres.start({ directory: join(directory, "pg"), port: await freePort(), durable: false }).pipe(
        Scope.provide(scope)
      )
    )
    url = Redacted.value(postgres.url)
    const shared = {
      DATABASE_URL: url,
      SERVICE_SEAL_KEY: randomBytes(32).toString("base64"),
      SERVICE_GIT_DIR: join(directory, "git"),
      SERVICE_ENABLE_DEV_AUTH: "true",
      SERVICE_DNS_LISTEN: "off",
      SERVICE_WORKERS: "off"
    }
    const [smtpA, smtpB] = await Promise.all([
      Effect.runPromise(Scope.provide(FakeSmtpServer.make(), scope)),
      Effect.runPromise(Scope.provide(FakeSmtpServer.make(), scope))
    ])
    // Both at once on the empty database: the migrations run once, under their lock, and both start.
    ;[a, b] = await Promise.all([startReplica("a", smtpA, shared), startReplica("b", smtpB, shared)])
  }, 360_000)

  afterAll(async () => {
    // The replica killed by the last test is gone already (stopServer waits only for a live one).
    const live = [a, b].filter((replica) => replica !== undefined && replica.server.child.signalCode === null)
    await Promise.all(live.map((replica) => stopServer(replica.server.child, "SIGTERM")))
    await Effect.runPromise(Scope.close(scope, Exit.void))
    rmSync(directory, { recursive: true, force: true })
  }, 60_000)

  it("migrated once though both started together", async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      const { rows } = await client.query(
        "SELECT migration_id, count(*)::int AS n FROM hostplane.effect_sql_migrations GROUP BY migration_id HAVING count(*) > 1"
      )
      expect(rows).toEqual([])
      const names = await client.query(
        "SELECT DISTINCT application_name FROM pg_stat_activity WHERE application_name LIKE 'hostplane/%'"
      )
      // Each replica's connections carry its own name.
      expect(names.rows.length).toBeGreaterThanOrEqual(2)
      // Each replica's feeds (the auth cache's, the job runner's, the node revision's, ...) listen on one session, and
      // its job runner's lock ("hjob") is held there too: one backend each (one per feed and one for the lock before).
      const sessions = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE application_name LIKE 'hostplane/%' AND (query ~* '^\\s*LISTEN\\y' OR pid IN (SELECT pid FROM pg_locks
          WHERE locktype = 'advisory' AND classid = x'686a6f62'::int AND objsubid = 2 AND granted))
        GROUP BY application_name`)
      expect(sessions.rows).toEqual([{ n: 1 }, { n: 1 }])
    } finally {
      await client.end()
    }
  })

  it("serves on one what was written on the other", async () => {
    const owner = await signIn(a.base, "replica-owner")
    expect((await owner.call("POST", "/v1/orgs", { name: "Shared", slug: "shared-org" })).status).toBe(201)
    expect((await owner.call("POST", "/v1/orgs/shared-org/projects", { name: "web" })).status).toBe(201)
    const onB = await fetch(`${b.base}/v1/orgs/shared-org/projects/web`, { headers: owner.headers })
    expect(onB.status).toBe(200)
    expect(((await onB.json()) as { name: string }).name).toBe("web")
  })

  it("refuses on one a token revoked on the other, once the change is heard", async () => {
    const user = await signIn(a.base, "replica-tokens")
    const created = await user.call("POST", "/v1/me/tokens", { name: "replicas" })
    expect(created.status).toBe(201)
    const bearer = { authorization: `Bearer ${created.body.token as string}` }
    // Read on B first, so B's cache holds the token.
    expect(await status(`${b.base}/v1/me`, bearer)).toBe(200)
    expect(await status(`${b.base}/v1/me`, bearer)).toBe(200)
    expect((await user.call("DELETE", `/v1/me/tokens/${created.body.id as string}`)).status).toBe(204)
    const heard = await until(async () => (await status(`${b.base}/v1/me`, bearer)) === 401, 10_000, "revoked token")
    console.info(`a token revoked on A was refused on B after ${heard} ms`)
  })

  it("drops on one a membership removed on the other, once the change is heard", async () => {
    const owner = await signIn(a.base, "replica-admin")
    expect((await owner.call("POST", "/v1/orgs", { name: "Team", slug: "team-org" })).status).toBe(201)
    const member = await signIn(b.base, "replica-member")
    const added = await owner.call("POST", "/v1/orgs/team-org/members", {
      provider: "dev",
      subject: "replica-member",
      role: "member"
    })
    expect(added.status).toBe(201)
    const members = `${b.base}/v1/orgs/team-org/members`
    await until(async () => (await status(members, member.headers)) === 200, 10_000, "added member")
    expect(await status(members, member.headers)).toBe(200)
    const userId = (await member.call("GET", "/v1/me")).body.user.id as string
    expect((await owner.call("DELETE", `/v1/orgs/team-org/members/${userId}`)).status).toBe(204)
    const heard = await until(async () => (await status(members, member.headers)) === 404, 10_000, "removed member")
    console.info(`a membership removed on A was dropped on B after ${heard} ms`)
  })

  it("finishes on the survivor a job whose replica was killed mid-job", async () => {
    const owner = await signIn(a.base, "replica-mailer")
    expect((await owner.call("POST", "/v1/orgs", { name: "Mail", slug: "mail-org" })).status).toBe(201)
    // Whichever replica claims the invite's mail job, its SMTP server takes the message and never answers.
    await Promise.all([Effect.runPromise(a.smtp.holdNext(1)), Effect.runPromise(b.smtp.holdNext(1))])
    const invited = await owner.call("POST", "/v1/orgs/mail-org/invites", { email: "zoe@example.com", role: "member" })
    expect(invited.status).toBe(201)
    const held = async (replica: Replica) => (await Effect.runPromise(replica.smtp.held)).length > 0
    await until(async () => (await held(a)) || (await held(b)), 60_000, "the mail job's first send")
    const [victim, survivor] = (await held(a)) ? [a, b] : [b, a]
    // The survivor sends for real.
    await Effect.runPromise(survivor.smtp.reset)
    const killedAt = performance.now()
    await stopServer(victim.server.child, "SIGKILL")
    const sent = async () =>
      (await Effect.runPromise(survivor.smtp.received)).some((message) => message.to.includes("zoe@example.com"))
    // Within the lease (20 s) and well inside part 15's 30 s on a loaded machine; the killed runner's session lock
    // frees the job sooner.
    await until(sent, 60_000, "the survivor's send")
    const takeover = Math.round(performance.now() - killedAt)
    console.info(`replica ${victim.name} killed mid-send; ${survivor.name} sent the mail ${takeover} ms later`)
    // The survivor still answers.
    expect(await status(`${survivor.base}/v1/me`, owner.headers)).toBe(200)
  }, 120_000)
})
