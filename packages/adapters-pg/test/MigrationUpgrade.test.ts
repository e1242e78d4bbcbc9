import { PgClient, PgMigrator } from "@effect/sql-pg"
import { assert, layer } from "@effect/vitest"
import { type Migration, legacyMigrations, migrations, PgDatabase } from "@hostplane/adapters-pg"
import { legacyLastMigration, legacyMigrationIds } from "@hostplane/adapters-pg/LegacyPublic"
import * as Migrator from "@hostplane/adapters-pg/Migrator"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { Cause, Context, Effect, Exit, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"

/** A database created empty beside the test's, dropped when the scope closes. */
const freshDatabase = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const { url } = yield* TestDatabase
  const name = `hp_upgrade_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
  yield* Effect.acquireRelease(sql`CREATE DATABASE ${sql(name)}`, () =>
    sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`.pipe(Effect.ignore)
  )
  const database = new URL(Redacted.value(url))
  database.pathname = `/${name}`
  return Redacted.make(database.href)
})

/** Runs `effect` on a client of `url` looking in `schema` (as hostplane's own pool does), in the test's scope. */
const inSchema = <A, E>(
  url: Redacted.Redacted<string>,
  schema: string,
  effect: Effect.Effect<A, E, SqlClient.SqlClient>
) => effect.pipe(Effect.provide(PgClient.layer(PgDatabase.clientConfig(url, { schema, maxConnections: 1 }))))

/** As an earlier hostplane migrated: its schema, then Effect's `PgMigrator` over the global numbering up to `last`. */
const migrateTheEarlierWay = (url: Redacted.Redacted<string>, schema: string, last = legacyMigrationIds.length) =>
  inSchema(
    url,
    schema,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(`CREATE SCHEMA ${schema}`)
      const upTo = Object.fromEntries(Object.entries(legacyMigrations).filter(([id]) => Number(id.slice(0, 4)) <= last))
      yield* PgMigrator.make({})({ loader: PgMigrator.fromRecord(upTo) })
    })
  )

/** The migrations with each run noted in `ran`. */
const watched = (list: ReadonlyArray<Migration>, ran: Array<string>): ReadonlyArray<Migration> =>
  list.map((migration) => ({
    ...migration,
    run: Effect.andThen(
      Effect.sync(() => ran.push(migration.id)),
      migration.run
    )
  }))

/** The migrations record, rows as stored (with their times, so a row written again shows). */
const record = (sql: SqlClient.SqlClient) =>
  sql<{
    readonly migrationId: number
    readonly name: string
    readonly createdAt: Date
  }>`SELECT migration_id, name, created_at FROM effect_sql_migrations ORDER BY migration_id`

/** Everything a migration makes in `schema`: columns, constraints, indexes, functions and triggers, by definition. */
const definitions = (sql: SqlClient.SqlClient, schema: string) =>
  Effect.all({
    columns: sql`SELECT table_name, column_name, ordinal_position, data_type, column_default, is_nullable
      FROM information_schema.columns WHERE table_schema = ${schema} ORDER BY 1, 3`,
    constraints: sql`SELECT conrelid::regclass::text AS on_table, conname, pg_get_constraintdef(c.oid) AS definition
      FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = ${schema} ORDER BY 1, 2`,
    indexes: sql`SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = ${schema} ORDER BY 1, 2`,
    functions: sql`SELECT p.oid::regprocedure::text AS name, pg_get_functiondef(p.oid) AS definition FROM pg_proc p
      JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = ${schema} ORDER BY 1`,
    triggers: sql`SELECT t.tgrelid::regclass::text AS on_table, t.tgname, pg_get_triggerdef(t.oid) AS definition
      FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ${schema} AND NOT t.tgisinternal ORDER BY 1, 2`,
    record: sql`SELECT migration_id, name FROM effect_sql_migrations ORDER BY 1`
  })

/** hostplane's database layer started on `url` in the test's scope; answers its `SqlClient`. */
const start = (url: Redacted.Redacted<string>, options: PgDatabase.Options = {}) =>
  Effect.map(Layer.build(PgDatabase.layer(url, options)), (context) => Context.get(context, SqlClient.SqlClient))

const widgets: Migration = {
  id: "widgets/0001_create_widgets",
  area: "widgets",
  run: Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE widgets (id text PRIMARY KEY)`)
}

layer(TestDatabase.layerBare, { excludeTestServices: true })(
  "per-area migrations over the earlier global numbering",
  (it) => {
    it.effect(
      "a database migrated by the global numbering is taken as it is: nothing runs again, the schema is a fresh start's",
      () =>
        Effect.gen(function* () {
          const earlier = yield* freshDatabase
          yield* migrateTheEarlierWay(earlier, "hostplane")
          const before = yield* inSchema(earlier, "hostplane", Effect.flatMap(SqlClient.SqlClient, record))
          const ran: Array<string> = []
          yield* inSchema(earlier, "hostplane", Migrator.applyMigrations(watched(migrations, ran)))
          // Only migrations past the earlier numbering run (none while there are none).
          assert.deepStrictEqual(
            ran,
            migrations.slice(legacyMigrationIds.length).map((migration) => migration.id)
          )
          // The start itself (its lock, its move check, its runner) finds nothing to do either.
          const sql = yield* start(earlier)
          assert.deepStrictEqual((yield* record(sql)).slice(0, before.length), before)
          assert.strictEqual((yield* record(sql)).length, migrations.length)

          const fresh = yield* freshDatabase
          const freshSql = yield* start(fresh)
          assert.deepStrictEqual(yield* definitions(sql, "hostplane"), yield* definitions(freshSql, "hostplane"))
          // Nothing was pending or unknown afterwards: ready.
          const ready = yield* PgDatabase.readiness().pipe(Effect.provideService(SqlClient.SqlClient, sql))
          assert.deepStrictEqual(ready.migrations, { ok: true, applied: migrations.length, latest: migrations.length })
        })
    )

    it.effect("a database of an earlier version gets exactly the rest, under the numbers that version gave them", () =>
      Effect.gen(function* () {
        const earlier = yield* freshDatabase
        yield* migrateTheEarlierWay(earlier, "hostplane", legacyLastMigration)
        const ran: Array<string> = []
        const rows = yield* inSchema(
          earlier,
          "hostplane",
          Effect.gen(function* () {
            yield* Migrator.applyMigrations(watched(migrations, ran))
            return yield* record(yield* SqlClient.SqlClient)
          })
        )
        assert.deepStrictEqual(
          ran,
          migrations.slice(legacyLastMigration).map((migration) => migration.id)
        )
        assert.deepStrictEqual(
          rows.map((row) => row.migrationId),
          migrations.map((_, index) => index + 1)
        )
        assert.deepStrictEqual(
          rows.slice(0, legacyMigrationIds.length).map((row) => row.name),
          Object.keys(legacyMigrations).map((key) => key.slice(5))
        )
      })
    )

    it.effect(
      "an area's next migration runs once, is recorded by its id under the next number, and an older code refuses it",
      () =>
        Effect.gen(function* () {
          const url = yield* freshDatabase
          yield* start(url)
          const ran: Array<string> = []
          const exit = yield* inSchema(
            url,
            "hostplane",
            Effect.gen(function* () {
              yield* Migrator.applyMigrations(watched([...migrations, widgets], ran))
              yield* Migrator.applyMigrations(watched([...migrations, widgets], ran))
              const rows = yield* record(yield* SqlClient.SqlClient)
              assert.deepStrictEqual(rows.at(-1)?.name, widgets.id)
              assert.strictEqual(rows.at(-1)?.migrationId, migrations.length + 1)
              // What an older hostplane compares: the record's highest number is past its own, so it refuses too.
              assert.isAbove(rows.at(-1)!.migrationId, legacyMigrationIds.length)
              return yield* Effect.exit(Migrator.applyMigrations(migrations))
            })
          )
          assert.deepStrictEqual(ran, [widgets.id])
          assert.isTrue(Exit.isFailure(exit))
          if (Exit.isFailure(exit)) {
            const message = Cause.pretty(exit.cause)
            assert.include(message, `the database is at migration ${migrations.length + 1}, newer than this hostplane`)
            assert.include(message, widgets.id)
          }
          const exitAtStart = yield* Effect.exit(start(url))
          assert.isTrue(Exit.isFailure(exitAtStart))
          const ready = yield* inSchema(url, "hostplane", PgDatabase.readiness())
          assert.deepStrictEqual(ready.migrations, {
            ok: false,
            applied: migrations.length + 1,
            latest: migrations.length
          })
        })
    )

    it.effect(
      "embedded in a host's database (its own tables and Effect migrations in public): the earlier record in the host's " +
        "schema for hostplane is taken as it is, the host's untouched",
      () =>
        Effect.gen(function* () {
          const url = yield* freshDatabase
          const hostMigrations = {
            "0001_create_users": Effect.flatMap(SqlClient.SqlClient, (sql) =>
              Effect.andThen(
                sql`CREATE TABLE users (id serial PRIMARY KEY, email text NOT NULL)`,
                sql`INSERT INTO users (email) VALUES ('ada@example.com')`
              )
            ),
            "0002_create_jobs": Effect.flatMap(
              SqlClient.SqlClient,
              (sql) => sql`CREATE TABLE jobs (id serial PRIMARY KEY)`
            )
          }
          const host = PgClient.layer({ url, maxConnections: 2 })
          const hostState = Effect.flatMap(SqlClient.SqlClient, (sql) =>
            Effect.all([
              sql`SELECT migration_id, name, created_at FROM public.effect_sql_migrations ORDER BY 1`,
              sql`SELECT * FROM public.users ORDER BY 1`
            ])
          ).pipe(Effect.provide(host))
          yield* PgMigrator.make({})({ loader: PgMigrator.fromRecord(hostMigrations) }).pipe(Effect.provide(host))
          const hostBefore = yield* hostState
          yield* migrateTheEarlierWay(url, "host_hostplane")
          const before = yield* inSchema(url, "host_hostplane", Effect.flatMap(SqlClient.SqlClient, record))

          const context = yield* Layer.build(
            PgDatabase.layerFromClient({ schema: "host_hostplane" }).pipe(Layer.provide(host))
          )
          const sql = Context.get(context, SqlClient.SqlClient)
          assert.deepStrictEqual((yield* record(sql)).slice(0, before.length), before)
          assert.strictEqual((yield* record(sql)).length, migrations.length)
          assert.deepStrictEqual(yield* hostState, hostBefore)

          const fresh = yield* freshDatabase
          const freshSql = yield* start(fresh, { schema: "host_hostplane" })
          assert.deepStrictEqual(
            yield* definitions(sql, "host_hostplane"),
            yield* definitions(freshSql, "host_hostplane")
          )
        })
    )
  }
)
