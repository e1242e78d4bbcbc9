import { assert, layer } from "@effect/vitest"
import { BackupStoreDisk } from "@hostplane/adapters-providers"
import { Database, Kernel } from "@hostplane/core"
import { databaseNodeSuite } from "@hostplane/testkit"
import { ConfigProvider, Context, Effect, Fiber, Layer, Redacted } from "effect"
import { execFile } from "node:child_process"
import { randomBytes, X509Certificate } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import * as Fs from "node:fs/promises"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Tls from "node:tls"
import { afterAll } from "vitest"
import * as Certificates from "../src/database/Certificates.ts"
import * as DatabaseNodeEmbedded from "../src/database/DatabaseNodeEmbedded.ts"

const folder = mkdtempSync(Path.join(Os.tmpdir(), "hostplane-node-"))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

const nodeIn = (name: string) =>
  Layer.mergeAll(
    DatabaseNodeEmbedded.layer({ directory: Path.join(folder, name), durable: false }),
    BackupStoreDisk.layerTemp
  )

databaseNodeSuite("embedded PostgreSQL", nodeIn("contract"))

interface Psql {
  readonly ok: boolean
  readonly out: string
}

/** The real `psql` client, as a user of the database would run it. */
const psql = (endpoint: Database.NodeEndpoint, user: string, password: string, command: string) =>
  Effect.callback<Psql>((resume) => {
    execFile(
      "psql",
      ["-h", endpoint.host, "-p", String(endpoint.port), "-U", user, "-d", "app", "-XAtqc", command],
      { env: { ...process.env, PGPASSWORD: password, PGCONNECT_TIMEOUT: "10" } },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ ok: error === null, out: error === null ? stdout.trim() : stderr }))
    )
  })

const newProject = () => Kernel.makeId("prj", `prj_${randomBytes(8).toString("hex")}`)

const secret = () => randomBytes(24).toString("base64url")

const created = Effect.fnUntraced(function* () {
  const node = yield* Database.DatabaseNode
  const project = newProject()
  const password = secret()
  const endpoint = yield* node.ensure(project, yield* node.verifier(Redacted.make(password)))
  return { node, project, password, endpoint, owner: node.ownerOf(project) }
})

/**
 * One cluster for the psql tests that neither restore nor remove it, made by the first of them: a cluster's start is
 * most of such a test's time. Each test's tables and tokens are its own.
 */
let kept: Effect.Success<ReturnType<typeof created>> | undefined
const shared = Effect.suspend(() =>
  kept === undefined ? Effect.tap(created(), (made) => Effect.sync(() => (kept = made))) : Effect.succeed(kept)
)

layer(nodeIn("psql"), { timeout: 120_000 })("embedded PostgreSQL node with psql", (it) => {
  it.effect("the project role owns app; a token connects with psql and its session runs as the project role", () =>
    Effect.gen(function* () {
      const { node, project, password, endpoint, owner } = yield* shared
      assert.deepStrictEqual(yield* psql(endpoint, owner, password, "create table notes (body text)"), {
        ok: true,
        out: ""
      })
      assert.isFalse((yield* psql(endpoint, owner, "wrong", "select 1")).ok)
      const tokenPassword = secret()
      yield* node.createToken(project, {
        user: "tok_one",
        verifier: yield* node.verifier(Redacted.make(tokenPassword))
      })
      const who = yield* psql(endpoint, "tok_one", tokenPassword, "select current_user || ' ' || session_user")
      assert.deepStrictEqual(who, { ok: true, out: `${owner} tok_one` })
      const wrote = yield* psql(
        endpoint,
        "tok_one",
        tokenPassword,
        "insert into notes values ('hi'); create table t2 (x int)"
      )
      assert.isTrue(wrote.ok, wrote.out)
      const tableOwner = yield* psql(
        endpoint,
        owner,
        password,
        "select tableowner from pg_tables where tablename = 't2'"
      )
      assert.deepStrictEqual(tableOwner, { ok: true, out: owner })
    })
  )

  it.effect("a deleted token's open session ends and new connections are refused", () =>
    Effect.gen(function* () {
      const { node, project, password, endpoint, owner } = yield* shared
      const tokenPassword = secret()
      yield* node.createToken(project, {
        user: "tok_gone",
        verifier: yield* node.verifier(Redacted.make(tokenPassword))
      })
      const open = yield* Effect.forkChild(psql(endpoint, "tok_gone", tokenPassword, "select pg_sleep(30)"))
      // The token's session is open (its row, visible to every role, is in pg_stat_activity) before it is deleted.
      const sessions = psql(
        endpoint,
        owner,
        password,
        "select count(*) from pg_stat_activity where usename = 'tok_gone'"
      )
      for (let tries = 0; (yield* sessions).out !== "1"; tries++) {
        assert.isBelow(tries, 300, "the token's session opened")
        // Wall time: the suite runs on the test clock.
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
      }
      yield* node.deleteToken(project, "tok_gone")
      const ended = yield* Fiber.join(open)
      assert.isFalse(ended.ok)
      const refused = yield* psql(endpoint, "tok_gone", tokenPassword, "select 1")
      assert.isFalse(refused.ok)
      assert.match(refused.out, /authentication failed|does not exist/)
    })
  )

  it.effect(
    "a restore brings back exactly the generation's rows on the next timeline",
    () =>
      Effect.gen(function* () {
        const { node, project, password, endpoint, owner } = yield* created()
        const store = yield* Database.BackupStore
        yield* psql(
          endpoint,
          owner,
          password,
          "create table items (n int); insert into items select generate_series(1, 1000)"
        )
        const generation = yield* node.backup(project, (image) => store.put(`${project}/1-2.tar.gz`, image))
        assert.strictEqual(generation.epoch, 1)
        yield* psql(endpoint, owner, password, "insert into items values (5000); delete from items where n <= 10")
        yield* node.restore(project, store.read(`${project}/1-2.tar.gz`), 2)
        assert.deepStrictEqual(yield* psql(endpoint, owner, password, "select count(*), max(n), min(n) from items"), {
          ok: true,
          out: "1000|1000|1"
        })
        const timeline = yield* psql(endpoint, owner, password, "select timeline_id from pg_control_checkpoint()")
        assert.isTrue(timeline.ok)
        const later = yield* node.backup(project, (image) => store.put(`${project}/2-1.tar.gz`, image))
        assert.strictEqual(later.epoch, 2)
        // A restore of the older epoch goes on to a timeline never used before.
        yield* node.restore(project, store.read(`${project}/1-2.tar.gz`), 4)
        const fourth = yield* node.backup(project, (image) => store.put(`${project}/4-1.tar.gz`, image))
        assert.strictEqual(fourth.epoch, 4)
        assert.deepStrictEqual(yield* psql(endpoint, owner, password, "select count(*) from items"), {
          ok: true,
          out: "1000"
        })
      }),
    // Three images and two restores of a real cluster: slow on a loaded machine.
    180_000
  )

  it.effect("draining refuses connections to app until resumed", () =>
    Effect.gen(function* () {
      const { node, project, password, endpoint, owner } = yield* shared
      yield* node.drain(project)
      assert.isFalse((yield* psql(endpoint, owner, password, "select 1")).ok)
      yield* node.resume(project)
      assert.deepStrictEqual(yield* psql(endpoint, owner, password, "select 1"), { ok: true, out: "1" })
    })
  )
})

layer(BackupStoreDisk.layerTemp)("embedded PostgreSQL node from the settings", (it) => {
  it.effect(
    "its clusters flush to disk unless SERVICE_PG_EMBEDDED_DURABLE is false, as the server's own embedded PostgreSQL",
    () =>
      Effect.gen(function* () {
        /** The command line a new project's cluster runs under: PostgreSQL writes it to postmaster.opts. */
        const commandLine = Effect.fnUntraced(function* (name: string, settings: Record<string, string>) {
          const dataDir = Path.join(folder, name)
          const env = ConfigProvider.fromEnvRecord({ SERVICE_DATA_DIR: dataDir, ...settings })
          const project = newProject()
          yield* Effect.gen(function* () {
            const node = yield* Database.DatabaseNode
            yield* node.ensure(project, yield* node.verifier(Redacted.make(secret())))
          }).pipe(Effect.provide(DatabaseNodeEmbedded.layerConfig.pipe(Layer.provide(ConfigProvider.layer(env)))))
          const opts = Path.join(dataDir, "node", "db", project, "data", "postmaster.opts")
          return yield* Effect.promise(() => Fs.readFile(opts, "utf8"))
        })
        const throwaway = yield* commandLine("settings-throwaway", { SERVICE_PG_EMBEDDED_DURABLE: "false" })
        assert.include(throwaway, "fsync=off")
        const durable = yield* commandLine("settings-default", {})
        assert.include(durable, "listen_addresses=127.0.0.1")
        assert.notInclude(durable, "fsync=off")
      }),
    180_000
  )
})

layer(BackupStoreDisk.layerTemp)("embedded PostgreSQL node across restarts", (it) => {
  it.effect("a node started again on the same folder serves its clusters on the same port with their data", () =>
    Effect.gen(function* () {
      const directory = Path.join(folder, "restart")
      const project = newProject()
      const password = secret()
      const first = yield* Effect.scoped(
        Effect.gen(function* () {
          const node = Context.get(
            yield* Layer.build(DatabaseNodeEmbedded.layer({ directory, durable: false })),
            Database.DatabaseNode
          )
          const endpoint = yield* node.ensure(project, yield* node.verifier(Redacted.make(password)))
          yield* psql(
            endpoint,
            node.ownerOf(project),
            password,
            "create table kept (x int); insert into kept values (7)"
          )
          return endpoint
        })
      )
      yield* Effect.scoped(
        Effect.gen(function* () {
          const node = Context.get(
            yield* Layer.build(DatabaseNodeEmbedded.layer({ directory, durable: false })),
            Database.DatabaseNode
          )
          assert.deepStrictEqual(yield* node.endpoint(project), first)
          assert.deepStrictEqual(yield* psql(first, node.ownerOf(project), password, "select x from kept"), {
            ok: true,
            out: "7"
          })
        })
      )
    })
  )
})

/** psql with a libpq connection string: `sslmode`, `sslrootcert`, `hostaddr` as a client sets them. */
const psqlWith = (conninfo: string, password: string, command: string) =>
  Effect.callback<Psql>((resume) => {
    execFile(
      "psql",
      [conninfo, "-XAtqc", command],
      { env: { ...process.env, PGPASSWORD: password, PGCONNECT_TIMEOUT: "10" } },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ ok: error === null, out: error === null ? stdout.trim() : stderr }))
    )
  })

const writeFile = (path: string, contents: string) => Effect.promise(() => Fs.writeFile(path, contents))

const tlsQuery = "select ssl from pg_stat_ssl where pid = pg_backend_pid()"

layer(BackupStoreDisk.layerTemp)("embedded PostgreSQL node serves TLS", (it) => {
  it.effect(
    "every cluster answers sslmode require: without TLS the project role is refused; verify-full checks the authority and the host name",
    () =>
      Effect.gen(function* () {
        const directory = Path.join(folder, "tls")
        const project = newProject()
        const password = secret()
        const ca = Path.join(folder, "tls-ca.crt")
        const otherCa = Path.join(folder, "tls-other-ca.crt")
        const first = yield* Effect.scoped(
          Effect.gen(function* () {
            const node = Context.get(
              yield* Layer.build(DatabaseNodeEmbedded.layer({ directory, durable: false })),
              Database.DatabaseNode
            )
            const endpoint = yield* node.ensure(project, yield* node.verifier(Redacted.make(password)))
            assert.strictEqual(endpoint.sslmode, "require")
            assert.isString(node.authority)
            yield* writeFile(ca, node.authority!)
            yield* writeFile(otherCa, Certificates.makeAuthority("someone else").certificate)
            const at = `host=${endpoint.host} port=${endpoint.port} dbname=app user=${node.ownerOf(project)}`
            // No TLS, no entry: the role is refused before its password is asked.
            const plain = yield* psqlWith(`${at} sslmode=disable`, password, "select 1")
            assert.isFalse(plain.ok)
            assert.include(plain.out, "no encryption")
            assert.deepStrictEqual(yield* psqlWith(`${at} sslmode=require`, password, tlsQuery), {
              ok: true,
              out: "t"
            })
            assert.deepStrictEqual(yield* psqlWith(`${at} sslmode=verify-full sslrootcert=${ca}`, password, tlsQuery), {
              ok: true,
              out: "t"
            })
            const byName = `host=localhost hostaddr=127.0.0.1 port=${endpoint.port} dbname=app user=${node.ownerOf(project)}`
            assert.deepStrictEqual(
              yield* psqlWith(`${byName} sslmode=verify-full sslrootcert=${ca}`, password, tlsQuery),
              { ok: true, out: "t" }
            )
            const strangerCa = yield* psqlWith(`${at} sslmode=verify-full sslrootcert=${otherCa}`, password, "select 1")
            assert.isFalse(strangerCa.ok)
            assert.include(strangerCa.out, "certificate verify failed")
            const wrongName = `host=db.example.test hostaddr=127.0.0.1 port=${endpoint.port} dbname=app user=${node.ownerOf(project)}`
            const misnamed = yield* psqlWith(`${wrongName} sslmode=verify-full sslrootcert=${ca}`, password, "select 1")
            assert.isFalse(misnamed.ok)
            assert.include(misnamed.out, "does not match host name")
            return endpoint
          })
        )
        // Told another host (SERVICE_NODE_DB_HOST), the node started again issues a certificate naming it, under the
        // same authority.
        yield* Effect.scoped(
          Effect.gen(function* () {
            const node = Context.get(
              yield* Layer.build(DatabaseNodeEmbedded.layer({ directory, durable: false, host: "db.example.test" })),
              Database.DatabaseNode
            )
            assert.strictEqual(node.authority, yield* Effect.promise(() => Fs.readFile(ca, "utf8")))
            assert.deepStrictEqual(yield* node.endpoint(project), { ...first, host: "db.example.test" })
            const renamed = `host=db.example.test hostaddr=127.0.0.1 port=${first.port} dbname=app user=${node.ownerOf(project)}`
            assert.deepStrictEqual(
              yield* psqlWith(`${renamed} sslmode=verify-full sslrootcert=${ca}`, password, tlsQuery),
              { ok: true, out: "t" }
            )
          })
        )
      }),
    180_000
  )
})

/** The certificate a cluster serves right now: PostgreSQL's SSLRequest, then a TLS handshake that only reads it. */
const servedCertificate = (port: number) =>
  Effect.promise(
    () =>
      new Promise<X509Certificate>((resolve, reject) => {
        const socket = Net.connect(port, "127.0.0.1", () => socket.write(Buffer.from([0, 0, 0, 8, 4, 210, 22, 47])))
        socket.once("error", reject)
        socket.once("data", (answer) => {
          if (answer[0] !== 0x53) return reject(new Error("the cluster refused TLS"))
          const secure = Tls.connect({ socket, rejectUnauthorized: false }, () => {
            const raw = secure.getPeerCertificate().raw
            secure.destroy()
            resolve(new X509Certificate(raw))
          })
          secure.once("error", reject)
        })
      })
  )

// Live services: the renewal round sleeps on the real clock.
layer(Layer.empty, { excludeTestServices: true })("embedded PostgreSQL node renews certificates", (it) => {
  it.effect(
    "a running cluster's certificate near its end is issued again and loaded with pg_reload_conf, without a restart",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const directory = Path.join(folder, "renew")
          const node = Context.get(
            yield* Layer.build(
              DatabaseNodeEmbedded.layer({
                directory,
                durable: false,
                // Short-lived: 3 seconds after it is issued the certificate is within 30 days of its end (and each
                // one issued again after it, so the test sees a renewal even if the first came before it looked).
                certificateLifetime: 30 * 86_400_000 + 3_000,
                renewBefore: "30 days",
                renewalRound: "1 second"
              })
            ),
            Database.DatabaseNode
          )
          const project = newProject()
          const password = secret()
          const endpoint = yield* node.ensure(project, yield* node.verifier(Redacted.make(password)))
          const ca = Path.join(folder, "renew-ca.crt")
          yield* writeFile(ca, node.authority!)
          const startedAt = yield* psql(endpoint, node.ownerOf(project), password, "select pg_postmaster_start_time()")
          assert.isTrue(startedAt.ok)
          const first = yield* servedCertificate(endpoint.port)
          assert.isBelow(Date.parse(first.validTo) - Date.now(), 30 * 86_400_000 + 60_000)
          let served = first
          for (let tries = 0; served.serialNumber === first.serialNumber && tries < 120; tries++) {
            yield* Effect.sleep("500 millis")
            served = yield* servedCertificate(endpoint.port)
          }
          assert.notStrictEqual(served.serialNumber, first.serialNumber)
          assert.isAbove(Date.parse(served.validTo), Date.parse(first.validTo))
          assert.isTrue(served.verify(new X509Certificate(node.authority!).publicKey))
          // The new certificate checks out with verify-full, and the cluster was reloaded, not restarted.
          const at = `host=127.0.0.1 port=${endpoint.port} dbname=app user=${node.ownerOf(project)}`
          assert.deepStrictEqual(yield* psqlWith(`${at} sslmode=verify-full sslrootcert=${ca}`, password, tlsQuery), {
            ok: true,
            out: "t"
          })
          assert.deepStrictEqual(
            yield* psql(endpoint, node.ownerOf(project), password, "select pg_postmaster_start_time()"),
            startedAt
          )
        })
      ),
    180_000
  )
})
