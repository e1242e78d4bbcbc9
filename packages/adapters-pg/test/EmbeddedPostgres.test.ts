import { assert, describe, it } from "@effect/vitest"
import { EmbeddedPostgres, migrations, PgDatabase } from "@hostplane/adapters-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { PgClient } from "@effect/sql-pg"
import { Cause, ConfigProvider, Effect, Fiber, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs/promises"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"

/** An owner-only (0700) temp directory, removed afterwards. */
const tempDirectory = Effect.acquireRelease(
  Effect.promise(() => Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-embedded-test-"))),
  (directory) => Effect.promise(() => Fs.rm(directory, { recursive: true, force: true }))
)

const query = <A extends object>(
  url: Redacted.Redacted<string>,
  run: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>
) =>
  Effect.gen(function* () {
    return yield* run(yield* SqlClient.SqlClient)
  }).pipe(Effect.provide(PgClient.layer({ url, maxConnections: 1 })), Effect.orDie)

describe("EmbeddedPostgres", () => {
  it.live("initialises the cluster once and reuses it: data survives a restart on another port", () =>
    Effect.gen(function* () {
      const directory = yield* tempDirectory
      const first = yield* Effect.scoped(
        Effect.gen(function* () {
          const server = yield* EmbeddedPostgres.start({ directory, durable: false })
          yield* query(server.url, (sql) => sql`CREATE TABLE kept (value text)`)
          yield* query(server.url, (sql) => sql`INSERT INTO kept VALUES ('still here')`)
          return server
        })
      )
      const port = yield* EmbeddedPostgres.freePort
      const rows = yield* Effect.scoped(
        Effect.gen(function* () {
          const second = yield* EmbeddedPostgres.start({ directory, port, durable: false })
          assert.strictEqual(second.port, port)
          assert.notStrictEqual(second.port, first.port)
          return yield* query(second.url, (sql) => sql<{ value: string }>`SELECT value FROM kept`)
        })
      )
      assert.deepStrictEqual(rows, [{ value: "still here" }])
      const mode = (yield* Effect.promise(() => Fs.stat(Path.join(directory, "password")))).mode & 0o777
      assert.strictEqual(mode, 0o600)
      if (process.getuid?.() === 0) {
        // The server runs as `postgres`, so the owner-only directory had to become traversable (search only).
        const directoryMode = (yield* Effect.promise(() => Fs.stat(directory))).mode & 0o777
        assert.strictEqual(directoryMode, 0o701)
      }
    })
  )
})

describe("EmbeddedPostgres start failures", () => {
  it.live("a server that exits before it is ready fails the start with its last log lines", () =>
    Effect.gen(function* () {
      const directory = yield* tempDirectory
      const taken = yield* Effect.acquireRelease(
        Effect.promise(
          () =>
            new Promise<Net.Server>((resolve) => {
              const server = Net.createServer()
              server.listen(0, "127.0.0.1", () => resolve(server))
            })
        ),
        (server) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
      )
      const port = (taken.address() as Net.AddressInfo).port
      const error = yield* Effect.flip(Effect.scoped(EmbeddedPostgres.start({ directory, port, durable: false })))
      assert.strictEqual(error._tag, "EmbeddedPostgresError")
      assert.include(error.message, "Address already in use")
    })
  )
})

describe("EmbeddedPostgres start interrupted", () => {
  it.live("a start that never gets ready can be interrupted, and its server is stopped", () =>
    Effect.gen(function* () {
      const directory = yield* tempDirectory
      const pidFile = Path.join(directory, "data", "postmaster.pid")
      // A standby with no primary and no hot standby waits for WAL forever: never ready to accept connections.
      const start = yield* Effect.forkChild(
        Effect.scoped(
          EmbeddedPostgres.start({
            directory,
            durable: false,
            settings: { hot_standby: "off" },
            beforeStart: Effect.promise(() => Fs.writeFile(Path.join(directory, "data", "standby.signal"), ""))
          })
        )
      )
      const alive = (pid: number) => {
        try {
          process.kill(pid, 0)
          return true
        } catch {
          return false
        }
      }
      // The server's own pid file (initdb's single-user run leaves a negative one on the way).
      const pid = yield* Effect.promise(async () => {
        for (;;) {
          const pid = Number((await Fs.readFile(pidFile, "utf-8").catch(() => "")).split("\n")[0])
          if (pid > 0 && alive(pid)) return pid
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
      })
      yield* Fiber.interrupt(start)
      const exit = yield* Fiber.await(start)
      assert.isTrue(
        exit._tag === "Failure" && Cause.hasInterruptsOnly(exit.cause),
        `the start was still waiting: ${String(exit._tag === "Failure" ? Cause.pretty(exit.cause) : "it succeeded")}`
      )
      assert.isFalse(alive(pid), "the server is stopped with the start")
    })
  )
})

describe("EmbeddedPostgres.readyWatcher", () => {
  const line = "2026-11-23 20:41:00.000 UTC [42] LOG:  database system is ready to accept connections\n"
  const settled = (promise: Promise<void>) =>
    Promise.race([promise.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 20))])

  it("sees the ready line split across stderr chunks, and not before it is whole", async () => {
    for (const cut of [10, 40, 60, line.length - 3]) {
      const watcher = EmbeddedPostgres.readyWatcher()
      watcher.onLog("LOG:  database system was interrupted; last known up at 2026-11-23 20:40:00 UTC\n")
      watcher.onLog(line.slice(0, cut))
      assert.isFalse(await settled(watcher.ready), `cut at ${cut}`)
      watcher.onLog(line.slice(cut))
      assert.isTrue(await settled(watcher.ready), `cut at ${cut}`)
    }
  })
})

describe("PgDatabase.layerConfig", () => {
  const currentDatabase = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ name: string }>`SELECT current_database() AS name`
    const migrated = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM effect_sql_migrations`
    return { name: rows[0]!.name, migrations: migrated[0]!.n }
  })

  it.live("uses DATABASE_URL when it is set, migrated", () =>
    Effect.gen(function* () {
      const { url } = yield* TestDatabase
      const env = { DATABASE_URL: Redacted.value(url) }
      const found = yield* currentDatabase.pipe(
        Effect.provide(
          PgDatabase.layerConfig().pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env))))
        )
      )
      assert.strictEqual(found.name, new URL(Redacted.value(url)).pathname.slice(1))
      assert.strictEqual(found.migrations, migrations.length)
    }).pipe(Effect.provide(TestDatabase.layer))
  )

  it.live("starts the embedded server under <SERVICE_DATA_DIR>/pg when DATABASE_URL is unset", () =>
    Effect.gen(function* () {
      const directory = yield* tempDirectory
      const env = { SERVICE_DATA_DIR: directory, DATABASE_URL: "" }
      const found = yield* currentDatabase.pipe(
        Effect.provide(
          PgDatabase.layerConfig().pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env))))
        )
      )
      assert.deepStrictEqual(found, { name: "postgres", migrations: migrations.length })
      yield* Effect.promise(() => Fs.access(Path.join(directory, "pg", "data", "PG_VERSION")))
    })
  )
})
