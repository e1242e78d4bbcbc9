import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { migrations } from "@hostplane/adapters-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"

layer(TestDatabase.layerEmpty)("PgDatabase", (it) => {
  it.effect("runs every migration on a fresh database", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{
        migrationId: number
      }>`SELECT migration_id FROM effect_sql_migrations ORDER BY migration_id`
      assert.deepStrictEqual(
        rows.map((row) => row.migrationId),
        Object.keys(migrations).map((key) => Number(key.slice(0, 4)))
      )
    })
  )
})
