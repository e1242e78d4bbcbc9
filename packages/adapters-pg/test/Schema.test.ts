import { PgClient, PgMigrator } from "@effect/sql-pg"
import { assert, layer } from "@effect/vitest"
import { legacyMigrations, migrations, OrgStorePg, PgDatabase } from "@hostplane/adapters-pg"
import { legacyFunctions, legacyLastMigration, legacyTables } from "@hostplane/adapters-pg/LegacyPublic"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { makeId } from "@hostplane/core/kernel/Ids"
import type { OrgRow } from "@hostplane/core/orgs/Org"
import { OrgStore } from "@hostplane/core/orgs/OrgStore"
import { Cause, Context, Effect, Exit, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"

/** A database created empty beside the test's, dropped when the scope closes. */
const freshDatabase = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const { url } = yield* TestDatabase
  const name = `hp_schema_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
  yield* Effect.acquireRelease(sql`CREATE DATABASE ${sql(name)}`, () =>
    sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`.pipe(Effect.ignore)
  )
  const database = new URL(Redacted.value(url))
  database.pathname = `/${name}`
  return Redacted.make(database.href)
})

/** A plain client on `url` with the server's own defaults (`search_path` `"$user", public`), as a host's would be. */
const plain = (url: Redacted.Redacted<string>) => PgClient.layer({ url, maxConnections: 2 })

/** Runs `query` on a plain client to `url`. */
const onPlain = <A>(url: Redacted.Redacted<string>, query: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.flatMap(SqlClient.SqlClient, query).pipe(Effect.provide(plain(url)), Effect.orDie)

/** Starts hostplane's database layer on `url` in the test's scope; answers its `SqlClient`. */
const start = (url: Redacted.Redacted<string>, options: PgDatabase.Options = {}) =>
  Effect.map(Layer.build(PgDatabase.layer(url, options)), (context) => Context.get(context, SqlClient.SqlClient))

/** The names of every table, sequence, view, type and function in `schema`, by kind. */
const objectsIn = (sql: SqlClient.SqlClient, schema: string) =>
  Effect.gen(function* () {
    const relations = yield* sql<{ readonly name: string }>`SELECT c.relname AS name FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ${schema} AND c.relkind IN ('r', 'p', 'S', 'v', 'm') ORDER BY 1`
    const functions = yield* sql<{ readonly name: string }>`SELECT p.oid::regprocedure::text AS name FROM pg_proc p
      JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = ${schema} ORDER BY 1`
    const types = yield* sql<{ readonly name: string }>`SELECT t.typname AS name FROM pg_type t
      JOIN pg_namespace n ON n.oid = t.typnamespace
      WHERE n.nspname = ${schema} AND t.typtype IN ('e', 'd', 'r', 'm')
        OR (n.nspname = ${schema} AND t.typtype = 'c' AND t.typrelid = 0) ORDER BY 1`
    return {
      relations: relations.map((row) => row.name),
      functions: functions.map((row) => row.name),
      types: types.map((row) => row.name)
    }
  })

/** The record a fresh database gets: the earlier numbering's ids, then one per later migration. */
const migrationIds = migrations.map((_, index) => index + 1)

/** A backend's own tables, with rows, in `public`: the names almost every backend has. */
const hostTables = (sql: SqlClient.SqlClient) =>
  Effect.gen(function* () {
    yield* sql`CREATE TABLE users (id serial PRIMARY KEY, email text NOT NULL UNIQUE)`
    yield* sql`CREATE TABLE sessions (token text PRIMARY KEY, user_id int REFERENCES users (id))`
    yield* sql`CREATE TABLE jobs (id bigserial PRIMARY KEY, name text NOT NULL)`
    yield* sql`CREATE TABLE projects (id serial PRIMARY KEY, title text NOT NULL)`
    yield* sql`CREATE TABLE orgs (id serial PRIMARY KEY, label text NOT NULL)`
    yield* sql`INSERT INTO users (email) VALUES ('ada@example.com'), ('bob@example.com')`
    yield* sql`INSERT INTO sessions VALUES ('s1', 1)`
    yield* sql`INSERT INTO jobs (name) VALUES ('nightly')`
    yield* sql`INSERT INTO projects (title) VALUES ('website')`
    yield* sql`INSERT INTO orgs (label) VALUES ('acme')`
  })

/** Every row of the backend's own tables, and their columns, to compare before and after. */
const hostSnapshot = (sql: SqlClient.SqlClient) =>
  Effect.gen(function* () {
    const columns = yield* sql`SELECT table_name, column_name, data_type FROM information_schema.columns
      WHERE table_schema = 'public' ORDER BY table_name, column_name`
    const rows = yield* Effect.forEach(
      ["users", "sessions", "jobs", "projects", "orgs"],
      (table) => sql`SELECT * FROM ${sql(table)} ORDER BY 1`
    )
    return { columns, rows }
  })

const org = (id: string): OrgRow => ({
  id: makeId("org", id),
  slug: id.replaceAll("_", "-"),
  name: id,
  plan: "free",
  personal: false,
  createdAt: "2031-01-01T00:00:00.000Z"
})

layer(TestDatabase.layerBare, { excludeTestServices: true })("decisions part 18: hostplane in its own schema", (it) => {
  it.effect(
    "a fresh database: every table, sequence, function and the migrations record in hostplane, none in public",
    () =>
      Effect.gen(function* () {
        const url = yield* freshDatabase
        const sql = yield* start(url)
        const inSchema = yield* objectsIn(sql, "hostplane")
        assert.include(inSchema.relations, "effect_sql_migrations")
        for (const table of ["users", "sessions", "jobs", "projects", "orgs", "memberships", "audit_events"]) {
          assert.include(inSchema.relations, table)
        }
        // The identity columns' sequences live beside their tables.
        assert.include(inSchema.relations, "audit_events_seq_seq")
        assert.include(inSchema.functions, "hostplane_envelope_lock(text,text,text)")
        assert.include(inSchema.functions, "hostplane_auth_notify()")
        const inPublic = yield* onPlain(url, (plainSql) => objectsIn(plainSql, "public"))
        assert.deepStrictEqual(inPublic, { relations: [], functions: [], types: [] })
        const recorded = yield* sql<{ readonly migrationId: number }>`SELECT migration_id FROM effect_sql_migrations
        ORDER BY 1`
        assert.deepStrictEqual(
          recorded.map((row) => row.migrationId),
          migrationIds
        )
      })
  )

  it.effect(
    "beside a backend's own users, sessions, jobs, projects and orgs (with rows): they are left as they were",
    () =>
      Effect.gen(function* () {
        const url = yield* freshDatabase
        yield* onPlain(url, hostTables)
        const before = yield* onPlain(url, hostSnapshot)
        const sql = yield* start(url)
        // hostplane's stores work on their own tables of the same names.
        yield* OrgStorePg.layer.pipe(
          Layer.build,
          Effect.flatMap((context) => Context.get(context, OrgStore).insert(org("org_beside"))),
          Effect.provideService(SqlClient.SqlClient, sql)
        )
        assert.strictEqual((yield* sql`SELECT count(*)::int AS n FROM orgs`)[0]?.n, 1)
        const after = yield* onPlain(url, hostSnapshot)
        assert.deepStrictEqual(after, before)
        const inPublic = yield* onPlain(url, (plainSql) => objectsIn(plainSql, "public"))
        assert.notInclude(inPublic.relations, "effect_sql_migrations")
        assert.deepStrictEqual(inPublic.functions, [])
      })
  )

  it.effect("two schemas in one database are two installations", () =>
    Effect.gen(function* () {
      const url = yield* freshDatabase
      const one = yield* start(url, { schema: "tenant_one" })
      const two = yield* start(url, { schema: "tenant_two" })
      yield* one`INSERT INTO orgs (id, slug, name, plan, personal, created_at)
        VALUES ('org_1', 'one', 'One', 'free', false, now())`
      assert.strictEqual((yield* one`SELECT count(*)::int AS n FROM orgs`)[0]?.n, 1)
      assert.strictEqual((yield* two`SELECT count(*)::int AS n FROM orgs`)[0]?.n, 0)
      for (const sql of [one, two]) {
        assert.strictEqual(
          (yield* sql`SELECT count(*)::int AS n FROM effect_sql_migrations`)[0]?.n,
          migrationIds.length
        )
      }
      const schemas = yield* onPlain(
        url,
        (sql) =>
          sql<{ readonly nspname: string }>`SELECT nspname FROM pg_namespace WHERE nspname LIKE 'tenant_%' ORDER BY 1`
      )
      assert.deepStrictEqual(
        schemas.map((row) => row.nspname),
        ["tenant_one", "tenant_two"]
      )
    })
  )

  it.effect(
    "an installation with its tables in public (the earlier layout) is moved into the schema at start, rows kept",
    () =>
      Effect.gen(function* () {
        const url = yield* freshDatabase
        // Migrated the old way: every migration up to the last one that ran in public, on a plain client.
        const old = Object.fromEntries(
          Object.entries(legacyMigrations).filter(([id]) => Number(id.slice(0, 4)) <= legacyLastMigration)
        )
        yield* onPlain(url, (sql) =>
          Effect.gen(function* () {
            yield* PgMigrator.make({})({ loader: PgMigrator.fromRecord(old) })
            yield* sql`INSERT INTO orgs (id, slug, name, plan, personal, created_at)
            VALUES ('org_old', 'old', 'Old', 'free', false, '2030-01-01T00:00:00Z')`
            yield* sql`INSERT INTO audit_events (org_id, actor_id, action, target, data, at)
            VALUES ('org_old', 'usr_old', 'org.create', 'org_old', '{}', '2030-01-01T00:00:00Z')`
          }).pipe(Effect.provide(PgClient.layer(PgDatabase.clientConfig(url, { schema: "public" }))))
        )
        // The list the move works from is every table and function the old migrations made (operations was dropped).
        const old_ = yield* onPlain(url, (sql) => objectsIn(sql, "public"))
        assert.deepStrictEqual(
          old_.relations.filter((name) => !name.endsWith("_seq")),
          [...legacyTables.filter((name) => name !== "operations"), "effect_sql_migrations"].sort()
        )
        assert.deepStrictEqual(old_.functions, legacyFunctions.map((fn) => fn.replaceAll(", ", ",")).sort())

        const sql = yield* start(url)
        const inPublic = yield* onPlain(url, (plainSql) => objectsIn(plainSql, "public"))
        assert.deepStrictEqual(inPublic, { relations: [], functions: [], types: [] })
        const orgs = yield* sql<{ readonly id: string }>`SELECT id FROM orgs`
        assert.deepStrictEqual(
          orgs.map((row) => row.id),
          ["org_old"]
        )
        // The identity sequence moved with its table: the next audit row still gets the next number.
        yield* sql`INSERT INTO audit_events (org_id, actor_id, action, target, data, at)
        VALUES ('org_old', 'usr_old', 'org.update', 'org_old', '{}', now())`
        assert.deepStrictEqual(
          (yield* sql<{ readonly seq: string }>`SELECT seq::text FROM audit_events ORDER BY seq`).map((row) => row.seq),
          ["1", "2"]
        )
        // The triggers and the envelope function moved with them and still work.
        const locked = yield* sql`SELECT (org).id AS org_id FROM hostplane_envelope_lock('org_old', 'usr_old', 'prj_x')`
        assert.strictEqual(locked[0]?.orgId, "org_old")
        const recorded = yield* sql<{ readonly migrationId: number }>`SELECT migration_id FROM effect_sql_migrations
        ORDER BY 1`
        assert.deepStrictEqual(
          recorded.map((row) => row.migrationId),
          migrationIds
        )
        // A second start finds nothing to move or migrate.
        yield* start(url)
        assert.strictEqual((yield* sql`SELECT count(*)::int AS n FROM orgs`)[0]?.n, 1)
      })
  )

  it.effect("four processes starting at once on an empty database migrate once", () =>
    Effect.gen(function* () {
      const url = yield* freshDatabase
      const clients = yield* Effect.all(
        Array.from({ length: 4 }, () => start(url)),
        { concurrency: "unbounded" }
      )
      const counts = yield* Effect.forEach(
        clients,
        (sql) =>
          sql<{ readonly n: number; readonly distinct: number }>`SELECT count(*)::int AS n,
          count(DISTINCT migration_id)::int AS distinct FROM effect_sql_migrations`
      )
      for (const [row] of counts) assert.deepStrictEqual(row, { n: migrationIds.length, distinct: migrationIds.length })
    })
  )

  it.effect("a schema name that is not a plain identifier fails the start, naming SERVICE_PG_SCHEMA", () =>
    Effect.gen(function* () {
      const url = yield* freshDatabase
      for (const schema of ["Hostplane", "host-plane", "1st", "pg_mine", "a;drop table users", "", "x".repeat(64)]) {
        const exit = yield* Effect.exit(start(url, { schema }))
        assert.isTrue(Exit.isFailure(exit), schema)
        if (Exit.isFailure(exit)) assert.include(Cause.pretty(exit.cause), "SERVICE_PG_SCHEMA", schema)
      }
      // Nothing was created.
      const schemas = yield* onPlain(url, (sql) => sql`SELECT nspname FROM pg_namespace WHERE nspname = 'hostplane'`)
      assert.lengthOf(schemas, 0)
    })
  )

  it.effect("a database user without CREATE on the database gets a message naming the privilege", () =>
    Effect.gen(function* () {
      const url = yield* freshDatabase
      const sql = yield* SqlClient.SqlClient
      const role = `hp_limited_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`
      yield* Effect.acquireRelease(sql.unsafe(`CREATE ROLE ${role} LOGIN PASSWORD 'limited'`), () =>
        onPlain(url, (plainSql) => plainSql.unsafe(`DROP OWNED BY ${role}`)).pipe(
          Effect.andThen(sql.unsafe(`DROP ROLE IF EXISTS ${role}`)),
          Effect.ignore
        )
      )
      const limited = new URL(Redacted.value(url))
      limited.username = role
      limited.password = "limited"
      const exit = yield* Effect.exit(start(Redacted.make(limited.href)))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const message = Cause.pretty(exit.cause)
        assert.include(message, "CREATE privilege on database")
        assert.include(message, role)
      }
      // Granted CREATE, the same user starts.
      const name = new URL(Redacted.value(url)).pathname.slice(1)
      yield* sql.unsafe(`GRANT CREATE ON DATABASE ${name} TO ${role}`)
      const started = yield* start(Redacted.make(limited.href))
      assert.strictEqual((yield* started`SELECT current_schema() AS s`)[0]?.s, "hostplane")
    })
  )

  it.effect("a database user without rights in an existing schema gets a message naming the schema and privilege", () =>
    Effect.gen(function* () {
      const url = yield* freshDatabase
      const sql = yield* SqlClient.SqlClient
      // The schema was made by another user (an earlier start as the owner); this one may only connect.
      yield* start(url)
      const role = `hp_outside_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`
      yield* Effect.acquireRelease(sql.unsafe(`CREATE ROLE ${role} LOGIN PASSWORD 'outside'`), () =>
        onPlain(url, (plainSql) => plainSql.unsafe(`DROP OWNED BY ${role}`)).pipe(
          Effect.andThen(sql.unsafe(`DROP ROLE IF EXISTS ${role}`)),
          Effect.ignore
        )
      )
      const outside = new URL(Redacted.value(url))
      outside.username = role
      outside.password = "outside"
      const exit = yield* Effect.exit(start(Redacted.make(outside.href)))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const message = Cause.pretty(exit.cause)
        assert.include(message, `the database user ${role} lacks the USAGE and CREATE privilege on schema hostplane`)
        assert.include(message, `GRANT USAGE, CREATE ON SCHEMA hostplane TO ${role}`)
        assert.notInclude(message, "current transaction is aborted")
      }
      // Granted them and the tables (as a host's DBA would), the same user starts.
      yield* onPlain(url, (plainSql) =>
        Effect.all([
          plainSql.unsafe(`GRANT USAGE, CREATE ON SCHEMA hostplane TO ${role}`),
          plainSql.unsafe(`GRANT ALL ON ALL TABLES IN SCHEMA hostplane TO ${role}`),
          plainSql.unsafe(`GRANT ALL ON ALL SEQUENCES IN SCHEMA hostplane TO ${role}`)
        ])
      )
      const started = yield* start(Redacted.make(outside.href))
      assert.strictEqual((yield* started`SELECT current_schema() AS s`)[0]?.s, "hostplane")
    })
  )

  it.effect(
    "on a host's own PgClient: hostplane's pool on the same database, in its schema; the host's pool unchanged",
    () =>
      Effect.gen(function* () {
        const url = yield* freshDatabase
        const context = yield* Layer.build(
          PgDatabase.layerFromClient({ schema: "embedded_here" }).pipe(Layer.provide(plain(url)))
        )
        const sql = Context.get(context, SqlClient.SqlClient)
        assert.strictEqual((yield* sql`SELECT current_schema() AS s`)[0]?.s, "embedded_here")
        // hostplane's client reads snake_case columns as camelCase fields, whatever the host's client does.
        const [row] = yield* sql`SELECT 1 AS created_at`
        assert.deepStrictEqual(row, { createdAt: 1 })
        const inSchema = yield* onPlain(url, (plainSql) => objectsIn(plainSql, "embedded_here"))
        assert.include(inSchema.relations, "effect_sql_migrations")
        assert.deepStrictEqual((yield* onPlain(url, (plainSql) => objectsIn(plainSql, "public"))).relations, [])
      })
  )

  it.effect(
    "a DATABASE_URL whose options set another search_path: hostplane's own still wins, nothing lands in public",
    () =>
      Effect.gen(function* () {
        const url = yield* freshDatabase
        const overridden = new URL(Redacted.value(url))
        overridden.searchParams.set("options", "-c search_path=public")
        const sql = yield* start(Redacted.make(overridden.href))
        assert.strictEqual((yield* sql`SELECT current_schema() AS s`)[0]?.s, "hostplane")
        assert.deepStrictEqual((yield* onPlain(url, (plainSql) => objectsIn(plainSql, "public"))).relations, [])
      })
  )

  it.effect("a schema migrated past this code is refused at start, and left as it was", () =>
    Effect.gen(function* () {
      const url = yield* freshDatabase
      const sql = yield* start(url)
      yield* sql`INSERT INTO effect_sql_migrations (migration_id, name) VALUES (9999, 'from_the_future')`
      const exit = yield* Effect.exit(start(url))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        assert.include(Cause.pretty(exit.cause), "the database is at migration 9999, newer than this hostplane")
        assert.include(Cause.pretty(exit.cause), "from_the_future")
      }
      assert.strictEqual((yield* sql`SELECT max(migration_id)::int AS n FROM effect_sql_migrations`)[0]?.n, 9999)
    })
  )
})
