import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { areas, migrations, migrationsOf } from "@hostplane/adapters-pg"
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

describe("migrations folded from the areas", () => {
  it("ids are unique and numbered 1, 2, 3... in order, each file `NNNN_verb_noun`", () => {
    const keys = Object.keys(migrations)
    assert.isTrue(keys.every((key) => /^\d{4}_[a-z0-9_]+$/.test(key)))
    assert.deepStrictEqual(
      keys.map((key) => Number(key.slice(0, 4))),
      keys.map((_, index) => index + 1)
    )
    assert.strictEqual(keys.length, areas.flatMap((area) => Object.keys(area.migrations)).length)
  })

  it("two areas claiming one id is refused", () => {
    const noop = Effect.void
    assert.throws(() =>
      migrationsOf([
        { name: "a", stores: areas[0].stores, migrations: { "0001_create_a": noop } },
        { name: "b", stores: areas[0].stores, migrations: { "0001_create_b": noop } }
      ])
    )
  })
})
