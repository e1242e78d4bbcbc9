import { PgClient } from "@effect/sql-pg"
import { Config, Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import * as PgDatabase from "../PgDatabase.ts"

/** Env var through which `test/globalSetup.ts` hands the embedded server's URL to the test workers. */
export const embeddedUrlVariable = "HOSTPLANE_TEST_PG_URL"

/** Superuser URL of the test server: `TEST_DATABASE_URL`, else the embedded server of the vitest run. */
const serverUrl = Config.Redacted("TEST_DATABASE_URL").pipe(
  Config.orElse(() => Config.Redacted(embeddedUrlVariable)),
  Config.map((url) => new URL(Redacted.value(url)))
)

const onServer = (server: URL, statement: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
  Effect.gen(function* () {
    return yield* statement(yield* SqlClient.SqlClient)
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(server.href), maxConnections: 1 })), Effect.orDie)

/** A database of one test file on the shared test server: created empty, migrated, dropped when the layer closes. */
export class TestDatabase extends Context.Service<TestDatabase, { readonly url: Redacted.Redacted<string> }>()(
  "@hostplane/adapters-pg/testing/TestDatabase"
) {
  /** `PgClient`, `SqlClient` (as `PgDatabase.layer` builds them) and `TestDatabase` on a fresh database. */
  static readonly layer = Layer.unwrap(
    Effect.gen(function* () {
      const server = yield* serverUrl
      const name = `hp_test_${randomBytes(8).toString("hex")}`
      yield* Effect.acquireRelease(
        onServer(server, (sql) => sql`CREATE DATABASE ${sql(name)}`),
        () => onServer(server, (sql) => sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`).pipe(Effect.ignore)
      )
      const database = new URL(server.href)
      database.pathname = `/${name}`
      const url = Redacted.make(database.href)
      return PgDatabase.layer(url).pipe(Layer.merge(Layer.succeed(TestDatabase, { url })))
    }).pipe(Effect.orDie)
  )
}
