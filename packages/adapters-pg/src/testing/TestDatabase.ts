import { PgClient } from "@effect/sql-pg"
import { Config, Context, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import * as PgDatabase from "../PgDatabase.ts"

/** Env var naming a test server's superuser URL, for test files run outside the repo's vitest setup. */
export const embeddedUrlVariable = "HOSTPLANE_TEST_PG_URL"

/** Env var naming a migrated database on that server that each test file's database is copied from. */
export const templateVariable = "HOSTPLANE_TEST_PG_TEMPLATE"

/**
 * Env var naming where `test/globalSetup.ts` serves the run's test PostgreSQL, started on the first ask: a run of
 * memory-only test files starts none.
 */
export const setupVariable = "HOSTPLANE_TEST_PG_SETUP"

/** The run's server, asked once per worker process. */
let asked: Promise<{ readonly url: string; readonly template: string }> | undefined

const askSetup = (setup: string) =>
  Effect.promise(() => {
    asked ??= fetch(setup, { method: "POST" }).then(async (reply) => {
      if (!reply.ok) throw new Error(await reply.text())
      return (await reply.json()) as { readonly url: string; readonly template: string }
    })
    return asked
  })

/**
 * Superuser URL of the test server and the template to copy: the vitest run's (started when first asked), else
 * `TEST_DATABASE_URL` or `embeddedUrlVariable` with `templateVariable`.
 */
const testServer = Effect.gen(function* () {
  const setup = yield* Config.option(Config.NonEmptyString(setupVariable))
  if (Option.isSome(setup)) {
    const server = yield* askSetup(setup.value)
    return { server: new URL(server.url), template: Option.some(server.template) }
  }
  const url = yield* Config.Redacted("TEST_DATABASE_URL").pipe(
    Config.orElse(() => Config.Redacted(embeddedUrlVariable))
  )
  const template = yield* Config.option(Config.NonEmptyString(templateVariable))
  return { server: new URL(Redacted.value(url)), template }
})

/**
 * One connection per test server and process for `CREATE DATABASE` and `DROP DATABASE`, held while a database made
 * here lives: a connection is a PostgreSQL backend process started for it (about 40 ms of the server's CPU on the
 * loaded CI machine), and a test file made one to create its database and another to drop it. Closed with the last
 * of them, so no idle connection keeps the process from exiting.
 */
const admins = new Map<
  string,
  { readonly context: Promise<Context.Context<SqlClient.SqlClient>>; readonly scope: Scope.Closeable; users: number }
>()

const holdAdmin = (server: URL) =>
  Effect.sync(() => {
    let admin = admins.get(server.href)
    if (admin === undefined) {
      const scope = Scope.makeUnsafe()
      // One statement at a time (`CREATE DATABASE` runs outside any transaction block, so no pipelining).
      const layer = PgClient.layer({ url: Redacted.make(server.href), maxConnections: 1, idleTimeout: "1 hour" })
      admin = { context: Effect.runPromise(Layer.buildWithScope(layer, scope)), scope, users: 0 }
      admin.context.catch(() => undefined)
      admins.set(server.href, admin)
    }
    admin.users++
    return admin
  })

const releaseAdmin = (server: URL) =>
  Effect.suspend(() => {
    const admin = admins.get(server.href)
    if (admin === undefined || --admin.users > 0) return Effect.void
    admins.delete(server.href)
    return Scope.close(admin.scope, Exit.void)
  })

const onServer = (server: URL, statement: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
  Effect.acquireUseRelease(
    holdAdmin(server),
    (admin) =>
      Effect.flatMap(
        Effect.promise(() => admin.context),
        (context) => Effect.provideContext(Effect.flatMap(Effect.service(SqlClient.SqlClient), statement), context)
      ),
    () => releaseAdmin(server)
  ).pipe(Effect.orDie)

const databaseUrl = (server: URL, name: string) => {
  const database = new URL(server.href)
  database.pathname = `/${name}`
  return Redacted.make(database.href)
}

const uniqueName = (prefix: string) => `${prefix}_${randomBytes(8).toString("hex")}`

/** `CREATE DATABASE`, copied from `template` when given; dropped when the scope closes. */
const scopedDatabase = (server: URL, name: string, template: Option.Option<string>) =>
  Effect.acquireRelease(
    // The admin connection is held from the create to the drop.
    Effect.andThen(
      holdAdmin(server),
      onServer(server, (sql) =>
        Option.match(template, {
          onNone: () => sql`CREATE DATABASE ${sql(name)}`,
          // FILE_COPY copies the template's files (and checkpoints) instead of writing every page of it to the WAL:
          // about a third of the server's CPU per copy of the migrated template, and its drop about a quarter.
          onSome: (from) => sql`CREATE DATABASE ${sql(name)} TEMPLATE ${sql(from)} STRATEGY FILE_COPY`
        })
      ).pipe(Effect.onError(() => releaseAdmin(server)))
    ),
    () =>
      onServer(server, (sql) => sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`).pipe(
        Effect.ignore,
        Effect.ensuring(releaseAdmin(server))
      )
  )

/**
 * Creates and migrates the run's template database on the test server (for `test/globalSetup.ts`), dropped when the
 * scope closes. Copying it is cheaper than migrating a database per test file. It refuses connections once
 * migrated, since PostgreSQL copies a template only while no one is connected to it.
 */
export const template = (url: Redacted.Redacted<string>) =>
  Effect.gen(function* () {
    const server = new URL(Redacted.value(url))
    const name = uniqueName("hp_template")
    yield* scopedDatabase(server, name, Option.none())
    yield* PgDatabase.migrate.pipe(
      Effect.provide(PgClient.layer(PgDatabase.clientConfig(databaseUrl(server, name), { maxConnections: 1 })))
    )
    yield* onServer(server, (sql) => sql`ALTER DATABASE ${sql(name)} WITH ALLOW_CONNECTIONS false`)
    return name
  })

const testDatabase = (mode: "template" | "empty" | "bare") =>
  Layer.unwrap(
    Effect.gen(function* () {
      const { server, template } = yield* testServer
      const from = mode === "template" ? template : Option.none()
      const name = uniqueName("hp_test")
      yield* scopedDatabase(server, name, from)
      const url = databaseUrl(server, name)
      const database = Layer.succeed(TestDatabase, { url })
      return mode === "bare"
        ? Layer.merge(database, PgClient.layer({ url, maxConnections: 2 }))
        : PgDatabase.layer(url).pipe(Layer.merge(database))
    }).pipe(Effect.orDie)
  )

/** A database of one test file on the shared test server, migrated, dropped when the layer closes. */
export class TestDatabase extends Context.Service<TestDatabase, { readonly url: Redacted.Redacted<string> }>()(
  "@hostplane/adapters-pg/testing/TestDatabase"
) {
  /**
   * `PgClient`, `SqlClient` (as `PgDatabase.layer` builds them) and `TestDatabase` on a fresh database: a copy of
   * the run's migrated template when there is one (the migrations then have nothing left to do), else created empty.
   */
  static readonly layer = testDatabase("template")

  /** As `layer`, on a database created empty, so that every migration runs on it. */
  static readonly layerEmpty = testDatabase("empty")

  /**
   * A database created empty and left so (no hostplane schema, nothing migrated), with a plain `PgClient` on it (the
   * server's defaults: `search_path` `"$user", public`, no name transforms): what a host's own database looks like.
   */
  static readonly layerBare = testDatabase("bare")
}
