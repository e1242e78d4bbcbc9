import { assert, layer } from "@effect/vitest"
import { Transactor } from "@hostplane/core/kernel/Transactor"
import { Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TransactorPg } from "@hostplane/adapters-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"

const count = (name: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM tx_probe WHERE name = ${name}`.pipe(
      Effect.orDie
    )
    return rows[0]!.n
  })

const insert = (name: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`INSERT INTO tx_probe (name) VALUES (${name})`.pipe(Effect.orDie)
  })

layer(TransactorPg.layer.pipe(Layer.provideMerge(TestDatabase.layer)))("TransactorPg", (it) => {
  it.effect("commits every write of a successful effect", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE IF NOT EXISTS tx_probe (name text NOT NULL)`
      const tx = yield* Transactor
      yield* tx.withTransaction(Effect.andThen(insert("ok"), insert("ok")))
      assert.strictEqual(yield* count("ok"), 2)
    })
  )

  it.effect("rolls back on a typed failure and keeps the error", () =>
    Effect.gen(function* () {
      const tx = yield* Transactor
      const error = yield* tx
        .withTransaction(Effect.andThen(insert("failed"), Effect.fail("domain error" as const)))
        .pipe(Effect.flip)
      assert.strictEqual(error, "domain error")
      assert.strictEqual(yield* count("failed"), 0)
    })
  )

  it.effect("rolls back on a defect", () =>
    Effect.gen(function* () {
      const tx = yield* Transactor
      const exit = yield* Effect.exit(tx.withTransaction(Effect.andThen(insert("died"), Effect.die("boom"))))
      assert.isTrue(Exit.hasDies(exit))
      assert.strictEqual(yield* count("died"), 0)
    })
  )

  it.effect("a nested transaction is a savepoint: its failure keeps the outer writes", () =>
    Effect.gen(function* () {
      const tx = yield* Transactor
      yield* tx.withTransaction(
        Effect.gen(function* () {
          yield* insert("outer")
          yield* tx.withTransaction(Effect.andThen(insert("inner"), Effect.fail("inner"))).pipe(Effect.ignore)
        })
      )
      assert.strictEqual(yield* count("outer"), 1)
      assert.strictEqual(yield* count("inner"), 0)
    })
  )
})
