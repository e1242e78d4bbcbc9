import { PgClient, PgMigrator } from "@effect/sql-pg"
import { Config, Duration, Effect, Layer, Option, Redacted, Schema, String } from "effect"
import { SqlClient } from "effect/sql"
import * as Path from "node:path"
import * as EmbeddedPostgres from "./embedded/EmbeddedPostgres.ts"
import { migrations } from "./migrations/index.ts"

/** Pool settings every adapter relies on: `snake_case` columns read and written as `camelCase` fields. */
export const clientConfig = (
  url: Redacted.Redacted<string>,
  options: { readonly maxConnections?: number | undefined } = {}
): PgClient.PgPoolConfig => ({
  url,
  maxConnections: options.maxConnections,
  // Statements of concurrent requests are pipelined on shared connections (transactions and reserved connections
  // still get their own): one write and one wake-up for many, about half the PostgreSQL CPU per request.
  multiplex: true,
  transformQueryNames: String.camelToSnake,
  transformResultNames: String.snakeToCamel,
  // Audit `data` is stored as written: its keys are never renamed.
  transformJson: false
})

/**
 * Applies this package's pending migrations. `PgMigrator.layer` would also demand process and file services for
 * `pg_dump` schema dumps, which are not used here, so the same migrator runs without them.
 */
const migrator = PgMigrator.make({})({ loader: PgMigrator.fromRecord(migrations) })

/** The id of the newest migration this code ships. */
export const latestMigration = Math.max(0, ...Object.keys(migrations).map((key) => Number.parseInt(key, 10)))

/** The id of the newest migration applied to the database (0 when none has run). */
export const appliedMigration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [table] = yield* sql<{
    readonly found: string | null
  }>`SELECT to_regclass('effect_sql_migrations')::text AS found`
  if (table?.found === null || table?.found === undefined) return 0
  const [row] = yield* sql<{
    readonly latest: number | null
  }>`SELECT max(migration_id) AS latest FROM effect_sql_migrations`
  return row?.latest ?? 0
})

/** The database was migrated by a newer hostplane than this one: running on it could misread or damage its rows. */
export class NewerSchema extends Schema.TaggedError<NewerSchema>()("NewerSchema", {
  message: Schema.String,
  applied: Schema.Number,
  latest: Schema.Number
}) {}

/**
 * Applies this package's pending migrations, after refusing a database migrated past this code (a replica of an
 * older version started against it). Concurrent starts migrate once: the migrator locks its table first.
 */
export const migrate = Effect.gen(function* () {
  const applied = yield* appliedMigration
  if (applied > latestMigration) {
    return yield* new NewerSchema({
      message: `the database is at migration ${applied}, newer than this hostplane (its latest is ${latestMigration}): run the version that migrated it, or newer`,
      applied,
      latest: latestMigration
    })
  }
  return yield* migrator
})

/** What `/readyz` reports of the database: whether it answers (within `timeout`) and whether it is fully migrated. */
export const readiness = (timeout: Duration.Input = Duration.seconds(2)) =>
  appliedMigration.pipe(
    Effect.timeout(timeout),
    Effect.match({
      onFailure: (error) => ({
        database: { ok: false, error: error._tag === "TimeoutError" ? "no answer in time" : "unreachable" },
        migrations: { ok: false, applied: null, latest: latestMigration }
      }),
      onSuccess: (applied) => ({
        database: { ok: true },
        migrations: { ok: applied === latestMigration, applied, latest: latestMigration }
      })
    })
  )

/** `PgClient` and `SqlClient` on `url`, migrated before anything can use them. */
export const layer = (url: Redacted.Redacted<string>, options: { readonly maxConnections?: number | undefined } = {}) =>
  Layer.effectDiscard(migrate).pipe(Layer.provideMerge(PgClient.layer(clientConfig(url, options))))

/**
 * `DATABASE_URL` when set, else the embedded PostgreSQL under `embeddedDirectory`
 * (default `<SERVICE_DATA_DIR>/pg`, `SERVICE_DATA_DIR` defaulting to `.hostplane`), stopped with the layer.
 */
export const layerConfig = (options: { readonly embeddedDirectory?: string | undefined } = {}) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const url = yield* Config.option(Config.Redacted("DATABASE_URL"))
      if (Option.isSome(url) && Redacted.value(url.value).trim() !== "") return layer(url.value)
      const dataDir = yield* Config.String("SERVICE_DATA_DIR").pipe(Config.withDefault(".hostplane"))
      const embedded = yield* EmbeddedPostgres.start({
        directory: options.embeddedDirectory ?? Path.join(dataDir, "pg")
      })
      return layer(embedded.url)
    })
  )
