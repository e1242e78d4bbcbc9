import { Effect, Schema } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import type { AnyAreaPg } from "./Area.ts"
import { legacyMigrationIds, migrationsTable } from "./LegacyPublic.ts"

/** One migration of one area: `<area>/<NNNN_verb_noun>`, the number counting within the area. */
export interface Migration {
  readonly id: string
  readonly area: string
  readonly run: Effect.Effect<void, unknown, SqlClient.SqlClient>
}

const fileName = /^(\d{4})_[a-z0-9_]+$/

/** What a legacy migration's row says: its number in the global order and its file name without the number. */
const legacyRow = (id: string) => ({
  migrationId: legacyMigrationIds.indexOf(id) + 1,
  name: id.slice(id.indexOf("/") + 1 + 5)
})

/**
 * Every area's migrations in the order they run on an empty database: the migrations of the earlier global numbering
 * in that order (later areas' tables refer to earlier ones across it), then every other one area by area in the list's
 * (dependency) order, each area's by its number. Each area numbers its own from 0001 with no gap, so two areas adding a
 * migration at once never collide; a gap, a repeated number, a repeated area or a legacy migration no area declares
 * is a defect of the list, thrown at load.
 */
export const migrationsOf = (areas: ReadonlyArray<AnyAreaPg>): ReadonlyArray<Migration> => {
  const names = new Set<string>()
  const declared = new Map<string, Migration>()
  const later: Array<Migration> = []
  for (const area of areas) {
    if (names.has(area.name)) throw new Error(`two areas are named ${area.name}`)
    names.add(area.name)
    const keys = Object.keys(area.migrations).sort()
    keys.forEach((key, index) => {
      const number = fileName.exec(key)?.[1]
      if (number === undefined) throw new Error(`migration ${area.name}/${key} is not named NNNN_verb_noun`)
      if (Number(number) !== index + 1) {
        throw new Error(`${area.name}'s migrations must be numbered 0001, 0002... without gaps or repeats (${key})`)
      }
      const migration = { id: `${area.name}/${key}`, area: area.name, run: area.migrations[key]! }
      declared.set(migration.id, migration)
      if (!legacyMigrationIds.includes(migration.id)) later.push(migration)
    })
  }
  const legacy = legacyMigrationIds.map((id) => {
    const migration = declared.get(id)
    if (migration === undefined)
      throw new Error(`the migration ${id} is recorded by existing databases but declared by no area`)
    return migration
  })
  return [...legacy, ...later]
}

/** The migrations record's rows read against the migrations this code ships. */
export interface MigrationState {
  /** Rows in the record. */
  readonly recorded: number
  /** Shipped here, not yet applied, in running order. */
  readonly pending: ReadonlyArray<Migration>
  /** Applied by another hostplane (a newer one): `migration_id` and id. */
  readonly unknown: ReadonlyArray<{ readonly migrationId: number; readonly id: string }>
}

interface Row {
  readonly migration_id: number
  readonly name: string
}

/** A row's migration id: a legacy row is its number and short name; a later row names its id in full. */
const idOf = (row: Row): string => {
  const legacy = legacyMigrationIds[row.migration_id - 1]
  return legacy !== undefined && legacyRow(legacy).name === row.name ? legacy : row.name
}

const stateOf = (migrations: ReadonlyArray<Migration>, rows: ReadonlyArray<Row>): MigrationState => {
  const known = new Set(migrations.map((migration) => migration.id))
  const applied = new Set(rows.map(idOf))
  return {
    recorded: rows.length,
    pending: migrations.filter((migration) => !applied.has(migration.id)),
    unknown: rows
      .filter((row) => !known.has(idOf(row)))
      .map((row) => ({ migrationId: row.migration_id, id: idOf(row) }))
      .sort((a, b) => b.migrationId - a.migrationId)
  }
}

const readRows = (sql: SqlClient.SqlClient) =>
  sql<Row>`SELECT migration_id, name FROM ${sql(migrationsTable)} ORDER BY migration_id`.withoutTransform

/** The record's state in the client's schema (all pending when there is no record yet). */
export const migrationState = (migrations: ReadonlyArray<Migration>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [table] = yield* sql<{
      readonly found: string | null
    }>`SELECT to_regclass(${migrationsTable})::text AS found`.withoutTransform
    return stateOf(migrations, table?.found === null || table?.found === undefined ? [] : yield* readRows(sql))
  })

/** The database was migrated by a newer hostplane than this one: running on it could misread or damage its rows. */
export class NewerSchema extends Schema.TaggedError<NewerSchema>()("NewerSchema", {
  message: Schema.String,
  unknown: Schema.Array(Schema.String)
}) {}

/**
 * Applies the pending migrations in the current schema and records each; the caller holds the start's lock and its
 * transaction. The record is the table Effect's own migrator kept (same columns), so a database it migrated is read
 * as it is: nothing runs twice and nothing is converted. A legacy migration is recorded as that migrator did; a later
 * one gets the next `migration_id` and its full id as `name`, so an older hostplane, which refuses a database whose
 * highest `migration_id` is past its own, refuses one migrated by this. A row this code does not know is a database
 * migrated by a newer hostplane: refused before anything runs.
 */
export const applyMigrations = (migrations: ReadonlyArray<Migration>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS ${sql(migrationsTable)} (
      migration_id integer primary key,
      created_at timestamp with time zone not null default now(),
      name text not null
    )`
    const rows = yield* readRows(sql)
    const state = stateOf(migrations, rows)
    const [newest] = state.unknown
    if (newest !== undefined) {
      return yield* new NewerSchema({
        message:
          `the database is at migration ${newest.migrationId}, newer than this hostplane (it does not know ` +
          `${state.unknown.map((row) => row.id).join(", ")}): run the version that migrated it, or newer`,
        unknown: state.unknown.map((row) => row.id)
      })
    }
    let next = Math.max(legacyMigrationIds.length, ...rows.map((row) => row.migration_id)) + 1
    for (const migration of state.pending) {
      const record = legacyMigrationIds.includes(migration.id)
        ? legacyRow(migration.id)
        : { migrationId: next++, name: migration.id }
      yield* migration.run.pipe(
        Effect.mapError(
          (cause) =>
            new Migrator.MigrationError({ kind: "Failed", message: `Migration "${migration.id}" failed`, cause })
        ),
        Effect.withSpan(`Migrator ${migration.id}`)
      )
      yield* sql`INSERT INTO ${sql(migrationsTable)} (migration_id, name)
        VALUES (${record.migrationId}, ${record.name})`.withoutTransform
      yield* Effect.logDebug("applied migration").pipe(Effect.annotateLogs("migration", migration.id))
    }
    return state.pending.map((migration) => migration.id)
  })
