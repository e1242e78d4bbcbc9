import { areas } from "../areas.ts"
import { legacyMigrationIds } from "../LegacyPublic.ts"
import { migrationsOf } from "../Migrator.ts"

/** Every area's migrations in running order. */
export const migrations = migrationsOf(areas)

/**
 * The migrations of the earlier global numbering keyed as that numbering named its files (`0024_create_storage`), the
 * shape Effect's `PgMigrator.fromRecord` reads: what tests rebuild an installation of an earlier version with.
 */
export const legacyMigrations = Object.fromEntries(
  legacyMigrationIds.map((id, index) => [
    `${String(index + 1).padStart(4, "0")}_${id.slice(id.indexOf("/") + 6)}`,
    migrations.find((migration) => migration.id === id)!.run
  ])
)
