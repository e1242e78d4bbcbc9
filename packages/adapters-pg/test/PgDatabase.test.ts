import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { type AnyAreaPg, areas, migrations, migrationsOf } from "@hostplane/adapters-pg"
import { legacyMigrationIds } from "@hostplane/adapters-pg/LegacyPublic"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"

layer(TestDatabase.layerEmpty)("PgDatabase", (it) => {
  it.effect("runs every migration on a fresh database, recording the earlier numbering's ids first", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{
        migrationId: number
        name: string
      }>`SELECT migration_id, name FROM effect_sql_migrations ORDER BY migration_id`
      assert.deepStrictEqual(
        rows,
        migrations.map((migration, index) => ({
          migrationId: index + 1,
          name: index < legacyMigrationIds.length ? migration.id.slice(migration.id.indexOf("/") + 6) : migration.id
        }))
      )
    })
  )
})

const area = (name: string, migrations: AnyAreaPg["migrations"]): AnyAreaPg => ({
  name,
  stores: areas[0].stores,
  migrations
})

describe("migrations folded from the areas", () => {
  it("each area numbers its own 0001, 0002... and every id is `<area>/NNNN_verb_noun`", () => {
    for (const one of areas) {
      const keys = Object.keys(one.migrations).sort()
      assert.isTrue(
        keys.every((key) => /^\d{4}_[a-z0-9_]+$/.test(key)),
        one.name
      )
      assert.deepStrictEqual(
        keys.map((key) => Number(key.slice(0, 4))),
        keys.map((_, index) => index + 1),
        one.name
      )
    }
    assert.strictEqual(migrations.length, areas.flatMap((one) => Object.keys(one.migrations)).length)
    assert.strictEqual(new Set(migrations.map((migration) => migration.id)).size, migrations.length)
  })

  it("the earlier numbering's migrations run first, in that order; then each area's, in the areas' order", () => {
    assert.deepStrictEqual(
      migrations.slice(0, legacyMigrationIds.length).map((migration) => migration.id),
      legacyMigrationIds
    )
    const later = migrations.slice(legacyMigrationIds.length)
    const order = areas.map((one) => one.name)
    for (let index = 1; index < later.length; index++) {
      const [before, after] = [later[index - 1]!, later[index]!]
      assert.isTrue(
        order.indexOf(before.area) < order.indexOf(after.area) || (before.area === after.area && before.id < after.id),
        `${before.id} before ${after.id}`
      )
    }
  })

  it("two areas adding their next migration at once do not collide", () => {
    const noop = Effect.void
    const folded = migrationsOf([
      ...areas,
      area("widgets", { "0001_create_widgets": noop }),
      area("gadgets", { "0001_create_gadgets": noop })
    ])
    assert.deepStrictEqual(
      folded.slice(-2).map((migration) => migration.id),
      ["widgets/0001_create_widgets", "gadgets/0001_create_gadgets"]
    )
  })

  it("a gap, a repeated number, a bad name, a repeated area or an undeclared earlier migration is refused", () => {
    const noop = Effect.void
    assert.throws(() => migrationsOf([...areas, area("widgets", { "0002_create_widgets": noop })]), /numbered/)
    assert.throws(
      () => migrationsOf([...areas, area("widgets", { "0001_create_widgets": noop, "0001_add_size": noop })]),
      /numbered/
    )
    assert.throws(() => migrationsOf([...areas, area("widgets", { "1_create_widgets": noop })]), /NNNN_verb_noun/)
    assert.throws(() => migrationsOf([...areas, area("storage", {})]), /two areas/)
    assert.throws(() => migrationsOf(areas.filter((one) => one.name !== "storage")), /storage\/0001_create_storage/)
  })
})
