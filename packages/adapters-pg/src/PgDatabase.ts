import { PgClient } from "@effect/sql-pg"
import { Config, Duration, Effect, Layer, Option, Redacted, Schema, String } from "effect"
import { SqlClient } from "effect/sql"
import * as Os from "node:os"
import * as Path from "node:path"
import * as EmbeddedPostgres from "./embedded/EmbeddedPostgres.ts"
import { legacyFunctions, legacyTables, migrationsTable } from "./LegacyPublic.ts"
import { migrations } from "./migrations/index.ts"
import { applyMigrations, migrationState, NewerSchema } from "./Migrator.ts"

/** The PostgreSQL schema that holds every table, sequence and function of hostplane unless told otherwise. */
export const defaultSchema = "hostplane"

/** The setting that names the schema (`layerConfig`); the `schema` option of `layer` does the same in code. */
export const schemaVariable = "SERVICE_PG_SCHEMA"

/**
 * The schema could not be used: a name that is not a plain identifier, or a database user lacking a privilege.
 * `message` names the setting or the privilege, and is what a failed start prints.
 */
export class PgSchemaError extends Schema.TaggedError<PgSchemaError>()("PgSchemaError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/**
 * A schema name used unquoted in every statement: lowercase letters, digits and `_`, starting with a letter or `_`, at
 * most 63 bytes (PostgreSQL's limit, past which it silently truncates), and not one of PostgreSQL's own (`pg_*`,
 * `information_schema`). Quoting could accept more, but one spelling everywhere (settings, psql, `pg_dump -n`) is worth
 * more than the rarer names.
 */
export const validateSchema = (schema: string): Effect.Effect<string, PgSchemaError> =>
  /^[a-z_][a-z0-9_]{0,62}$/.test(schema) && !schema.startsWith("pg_") && schema !== "information_schema"
    ? Effect.succeed(schema)
    : Effect.fail(
        new PgSchemaError({
          message:
            `${schemaVariable} (the PostgreSQL layer's schema option) is ${JSON.stringify(schema)}: it must be a ` +
            "lowercase identifier (a-z, 0-9 and _, not starting with a digit or pg_, at most 63 characters)"
        })
      )

export interface Options {
  readonly maxConnections?: number | undefined
  /** The schema holding hostplane's tables (default `hostplane`). */
  readonly schema?: string | undefined
}

/** `hostplane/<host>/<pid>`, within PostgreSQL's 63 bytes. */
const applicationName = `hostplane/${Os.hostname()}/${process.pid}`.slice(0, 63)

/**
 * Pool settings every adapter relies on: `snake_case` columns read and written as `camelCase` fields, and every
 * connection's `search_path` set to hostplane's schema alone in its startup packet, so an unqualified name can only
 * mean one of hostplane's own tables, whatever the database's or the role's default `search_path` is. `schema` must
 * have passed `validateSchema`.
 */
export const clientConfig = (url: Redacted.Redacted<string>, options: Options = {}): PgClient.PgPoolConfig => ({
  url,
  maxConnections: options.maxConnections,
  startupParameters: { search_path: options.schema ?? defaultSchema },
  // Each process's connections carry its own name, so pg_stat_activity tells the replicas apart (and the metrics
  // count this process's connections by it).
  applicationName,
  // Statements of concurrent requests are pipelined on shared connections (transactions and reserved connections
  // still get their own): one write and one wake-up for many, about half the PostgreSQL CPU per request.
  multiplex: true,
  transformQueryNames: String.camelToSnake,
  transformResultNames: String.snakeToCamel,
  // Audit `data` is stored as written: its keys are never renamed.
  transformJson: false
})

/** The first key of the start's transaction lock (`pg_advisory_xact_lock(int4, int4)`): "hpmg"; the second is the schema's. */
const migrateLockSpace = 0x68706d67

/** How many migrations this code ships: the record's row count once the database is fully migrated. */
export const latestMigration = migrations.length

export { NewerSchema }

/** What `/readyz` reports of the database: whether it answers (within `timeout`) and whether it is fully migrated. */
export const readiness = (timeout: Duration.Input = Duration.seconds(2)) =>
  migrationState(migrations).pipe(
    Effect.timeout(timeout),
    Effect.match({
      onFailure: (error) => ({
        database: { ok: false, error: error._tag === "TimeoutError" ? "no answer in time" : "unreachable" },
        migrations: { ok: false, applied: null, latest: latestMigration }
      }),
      onSuccess: (state) => ({
        database: { ok: true },
        migrations: {
          ok: state.pending.length === 0 && state.unknown.length === 0,
          applied: state.recorded,
          latest: latestMigration
        }
      })
    })
  )

const isAuthorizationError = (error: unknown): boolean =>
  typeof error === "object" &&
  error !== null &&
  (("reason" in error && (error.reason as { _tag?: string })?._tag === "AuthorizationError") ||
    ("cause" in error && isAuthorizationError(error.cause)))

/**
 * An installation from before the schema had its tables in `public`: moved into `schema` when `schema` has none of
 * its own yet and `public` holds hostplane's migrations record (its first row is hostplane's first migration, so a
 * host's own Effect migrations table is never taken for it). `ALTER ... SET SCHEMA` moves each table with its rows,
 * indexes, constraints, triggers, owned sequences and row type; the functions move too. Runs under the start's lock.
 */
const moveFromPublic = (sql: SqlClient.SqlClient, schema: string) =>
  Effect.gen(function* () {
    const relations = (namespace: string) =>
      sql<{ readonly name: string }>`SELECT c.relname AS name FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ${namespace} AND c.relkind IN ('r', 'p')`
    const inSchema = new Set((yield* relations(schema)).map((row) => row.name))
    if (inSchema.has(migrationsTable)) return false
    const inPublic = new Set((yield* relations("public")).map((row) => row.name))
    if (!inPublic.has(migrationsTable)) return false
    const [first] = yield* sql<{ readonly name: string }>`SELECT name FROM public.${sql(migrationsTable)}
      WHERE migration_id = 1`.withoutTransform
    if (first?.name !== "create_identity_and_orgs") return false
    for (const table of [...legacyTables, migrationsTable]) {
      if (inPublic.has(table) && !inSchema.has(table))
        yield* sql.unsafe(`ALTER TABLE public.${table} SET SCHEMA ${schema}`)
    }
    for (const fn of legacyFunctions) {
      const [found] = yield* sql`SELECT to_regprocedure(${`public.${fn}`}) IS NOT NULL AS present`
      if (found?.present === true) yield* sql.unsafe(`ALTER FUNCTION public.${fn} SET SCHEMA ${schema}`)
    }
    return true
  })

/**
 * Makes `schema` hostplane's, up to date: created when missing, an earlier installation's tables moved in from
 * `public`, a database migrated past this code refused, then the pending migrations, all in one transaction under an
 * advisory lock on the schema's name, so processes starting at once on an empty database migrate once (the others
 * wait, then find nothing to do). The transaction sets its own `search_path`, so this holds on any client, not only on
 * one from `clientConfig`.
 */
export const migrateSchema = (schema: string) =>
  Effect.gen(function* () {
    yield* validateSchema(schema)
    const sql = yield* SqlClient.SqlClient
    return yield* sql
      .withTransaction(
        Effect.gen(function* () {
          yield* sql`SELECT pg_advisory_xact_lock(${migrateLockSpace}, hashtext(${schema}))`
          const [state] = yield* sql<{
            readonly present: boolean
            readonly canCreate: boolean
            readonly who: string
            readonly databaseName: string
          }>`SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = ${schema}) AS present,
            has_database_privilege(current_database(), 'CREATE') AS can_create,
            current_user AS who, current_database() AS database_name`
          if (state !== undefined && !state.present) {
            if (!state.canCreate) {
              return yield* new PgSchemaError({
                message:
                  `the database user ${state.who} lacks the CREATE privilege on database ${state.databaseName}, which ` +
                  `creating hostplane's schema ${schema} needs: GRANT CREATE ON DATABASE ${state.databaseName} TO ` +
                  `${state.who}, or create the schema for it (CREATE SCHEMA ${schema} AUTHORIZATION ${state.who})`
              })
            }
            yield* sql.unsafe(`CREATE SCHEMA ${schema}`)
          } else if (state !== undefined) {
            // Checked before anything runs in it: the migrator swallows its first refusal, and what fails then is a
            // later statement, with "current transaction is aborted" and no privilege named.
            const [rights] = yield* sql<{ readonly usage: boolean; readonly create: boolean }>`SELECT
              has_schema_privilege(${schema}, 'USAGE') AS usage, has_schema_privilege(${schema}, 'CREATE') AS create`
            const missing = [
              ...(rights?.usage === true ? [] : ["USAGE"]),
              ...(rights?.create === true ? [] : ["CREATE"])
            ]
            if (missing.length > 0) {
              return yield* new PgSchemaError({
                message:
                  `the database user ${state.who} lacks the ${missing.join(" and ")} privilege on schema ${schema}, ` +
                  `which starting hostplane there needs (it keeps its migrations record there): GRANT USAGE, CREATE ON ` +
                  `SCHEMA ${schema} TO ${state.who}, or start as the schema's owner`
              })
            }
          }
          yield* sql.unsafe(`SET LOCAL search_path TO ${schema}`)
          const moved = yield* moveFromPublic(sql, schema)
          if (moved) yield* Effect.logInfo(`moved hostplane's tables from schema public into schema ${schema}`)
          // A database migrated past this code (a replica of an older version started against it) is refused there.
          return yield* applyMigrations(migrations)
        })
      )
      .pipe(
        Effect.catchIf(isAuthorizationError, (cause) =>
          Effect.fail(
            new PgSchemaError({
              message:
                `the database user lacks a privilege in schema ${schema} that migrating needs (CREATE and USAGE on ` +
                `the schema, ownership of its tables): GRANT ALL ON SCHEMA ${schema} TO the user, or run the first ` +
                `start as the schema's owner`,
              cause
            })
          )
        )
      )
  })

/**
 * Applies the pending migrations in the schema this client's `search_path` names (`clientConfig`), else `hostplane`.
 */
export const migrate = Effect.flatMap(PgClient.PgClient, (client) =>
  migrateSchema(client.config.startupParameters?.["search_path"] ?? defaultSchema)
)

/**
 * Migrates, then checks that the pool's connections do look in `schema`: a URL's `options=-c search_path=...` (or a
 * host's startup options) would override the startup parameter and send every statement to another schema.
 */
const ready = (schema: string) =>
  Effect.gen(function* () {
    yield* migrate
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ readonly current: string | null }>`SELECT current_schema() AS current`
    if (row?.current !== schema) {
      return yield* new PgSchemaError({
        message:
          `the connections' search_path does not start with hostplane's schema ${schema} (current_schema() is ` +
          `${row?.current ?? "none"}): remove search_path from the connection's options (DATABASE_URL's options=-c ...)`
      })
    }
  })

/** `PgClient` and `SqlClient` on `url`, hostplane's schema (`options.schema`, default `hostplane`) migrated first. */
export const layer = (url: Redacted.Redacted<string>, options: Options = {}) =>
  Layer.unwrap(
    Effect.map(validateSchema(options.schema ?? defaultSchema), (schema) =>
      Layer.effectDiscard(ready(schema)).pipe(
        Layer.provideMerge(PgClient.layer(clientConfig(url, { ...options, schema })))
      )
    )
  )

/** The settings of a client that say where and as whom it connects (not how it names columns or what it shares). */
const connectionOf = (config: PgClient.PgClientConfig): PgClient.PgClientConfig => ({
  url: config.url,
  host: config.host,
  port: config.port,
  path: config.path,
  ssl: config.ssl,
  database: config.database,
  username: config.username,
  password: config.password,
  connectTimeout: config.connectTimeout,
  keepAlive: config.keepAlive,
  stream: config.stream,
  applicationName: config.applicationName,
  startupOptions: config.startupOptions,
  types: config.types
})

/**
 * hostplane's `PgClient` and `SqlClient` on the database of a host's own `PgClient` (required): the host's connection
 * settings (URL or host, port, user, password, TLS, stream), with hostplane's own pool, schema `search_path`, name
 * transforms and multiplexing, migrated first. The host's pool itself never runs hostplane's statements: they rely on
 * those transforms and on the `search_path`, which a host's pool does not promise (a host may set its own, or none).
 */
export const layerFromClient = (options: Options = {}) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const schema = yield* validateSchema(options.schema ?? defaultSchema)
      const host = yield* PgClient.PgClient
      const own = clientConfig(Redacted.make(""), { ...options, schema })
      const config: PgClient.PgPoolConfig = { ...own, ...connectionOf(host.config) }
      return Layer.effectDiscard(ready(schema)).pipe(Layer.provideMerge(PgClient.layer(config)))
    })
  )

/** `SERVICE_PG_SCHEMA`, else `hostplane`. */
export const schemaConfig = Config.String(schemaVariable).pipe(
  Config.map((value) => value.trim()),
  Config.withDefault(defaultSchema),
  Config.map((value) => (value === "" ? defaultSchema : value))
)

/**
 * `DATABASE_URL` when set, else the embedded PostgreSQL under `embeddedDirectory`
 * (default `<SERVICE_DATA_DIR>/pg`, `SERVICE_DATA_DIR` defaulting to `.hostplane`), stopped with the layer; hostplane's
 * tables in the schema `SERVICE_PG_SCHEMA` (default `hostplane`) either way.
 */
export const layerConfig = (options: { readonly embeddedDirectory?: string | undefined } = {}) =>
  Layer.unwrap(
    Effect.gen(function* () {
      // Checked before the embedded server starts, so a bad name fails at once and names its setting.
      const schema = yield* validateSchema(yield* schemaConfig)
      const url = yield* Config.option(Config.Redacted("DATABASE_URL"))
      if (Option.isSome(url) && Redacted.value(url.value).trim() !== "") return layer(url.value, { schema })
      const dataDir = yield* Config.String("SERVICE_DATA_DIR").pipe(Config.withDefault(".hostplane"))
      // Test servers throw their cluster away: skipping fsync saves each of them the flushes of initdb and migrations.
      const durable = yield* Config.Boolean("SERVICE_PG_EMBEDDED_DURABLE").pipe(Config.withDefault(true))
      const embedded = yield* EmbeddedPostgres.start({
        directory: options.embeddedDirectory ?? Path.join(dataDir, "pg"),
        durable
      })
      return layer(embedded.url, { schema })
    })
  )
