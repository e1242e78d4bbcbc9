import { PgClient } from "@effect/sql-pg"
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import * as PgDatabase from "../PgDatabase.ts"

/** Env var through which `test/globalSetup.ts` hands the embedded server's URL to the test workers. */
export const embeddedUrlVariable = "HOSTPLANE_TEST_PG_URL"

/** Env var naming the database, migrated once per vitest run, that each test file's database is copied from. */
export const templateVariable = "HOSTPLANE_TEST_PG_TEMPLATE"

/** Superuser URL of the test server: `TEST_DATABASE_URL`, else the embedded server of the vitest run. */
const serverUrl = Config.Redacted("TEST_DATABASE_URL").pipe(
  Config.orElse(() => Config.Redacted(embeddedUrlVariable)),
  Config.map((url) => new URL(Redacted.value(url)))
)

const onServer = (server: URL, statement: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
  Effect.gen(function* () {
    return yield* statement(yield* SqlClient.SqlClient)
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(server.href), maxConnections: 1 })), Effect.orDie)

const databaseUrl = (server: URL, name: string) => {
  const database = new URL(server.href)
  database.pathname = `/${name}`
  return Redacted.make(database.href)
}

const uniqueName = (prefix: string) => `${prefix}_${randomBytes(8).toString("hex")}`

/** `CREATE DATABASE`, copied from `template` when given; dropped when the scope closes. */
const scopedDatabase = (server: URL, name: string, template: Option.Option<string>) =>
  Effect.acquireRelease(
    onServer(server, (sql) =>
      Option.match(template, {
        onNone: () => sql`CREATE DATABASE ${sql(name)}`,
        onSome: (from) => sql`CREATE DATABASE ${sql(name)} TEMPLATE ${sql(from)}`
      })
    ),
    () => onServer(server, (sql) => sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`).pipe(Effect.ignore)
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
      const server = yield* serverUrl
      const from = mode === "template" ? yield* Config.option(Config.NonEmptyString(templateVariable)) : Option.none()
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
