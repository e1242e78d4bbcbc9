import { PgClient, PgMigrator } from "@effect/sql-pg"
import { Config, Effect, Layer, Option, Redacted, String } from "effect"
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
export const migrate = PgMigrator.make({})({ loader: PgMigrator.fromRecord(migrations) })

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
