import { assert, describe, it } from "@effect/vitest"
import { Kernel, Orgs } from "@hostplane/core"
import { ContractFixtures, layerMemory, OrgStoreMemory, TransactorMemory } from "@hostplane/testkit"
import { memoryTable, MemoryState, read, write } from "@hostplane/testkit/memory/MemoryState"
import { Deferred, Effect, Fiber, Layer, Option } from "effect"

const { makeOrg } = ContractFixtures

/** A table no area declares: a store holds it once it is first used. */
const notes = memoryTable("test.notes", () => new Map<string, string>())

/** Semantics only the memory store promises, beyond the PostgreSQL-equal contract suites. */
describe("memory Transactor", () => {
  it.effect("withTransaction serialises transactions: the second starts only after the first ends", () =>
    Effect.gen(function* () {
      const tx = yield* Kernel.Transactor
      const events: Array<string> = []
      const firstStarted = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const first = yield* Effect.forkChild(
        tx.withTransaction(
          Effect.gen(function* () {
            events.push("first start")
            yield* Deferred.succeed(firstStarted, undefined)
            yield* Deferred.await(release)
            events.push("first end")
          })
        )
      )
      yield* Deferred.await(firstStarted)
      const second = yield* Effect.forkChild(tx.withTransaction(Effect.sync(() => events.push("second"))))
      yield* Effect.yieldNow
      assert.deepStrictEqual(events, ["first start"])
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(first)
      yield* Fiber.join(second)
      assert.deepStrictEqual(events, ["first start", "first end", "second"])
    }).pipe(Effect.provide(layerMemory))
  )

  it.effect("a write outside a transaction waits for the running transaction, a read does not", () =>
    Effect.gen(function* () {
      const tx = yield* Kernel.Transactor
      const orgs = yield* Orgs.OrgStore
      const inside = makeOrg()
      const outside = makeOrg()
      const written = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const running = yield* Effect.forkChild(
        tx.withTransaction(
          Effect.gen(function* () {
            yield* orgs.insert(inside)
            yield* Deferred.succeed(written, undefined)
            yield* Deferred.await(release)
            return yield* Effect.fail("roll back")
          })
        )
      )
      yield* Deferred.await(written)
      const write = yield* Effect.forkChild(orgs.insert(outside))
      yield* Effect.yieldNow
      assert.isTrue(Option.isNone(yield* orgs.findById(inside.id)))
      assert.isTrue(Option.isNone(yield* orgs.findById(outside.id)))
      yield* Deferred.succeed(release, undefined)
      yield* Effect.flip(Fiber.join(running))
      yield* Fiber.join(write)
      assert.isTrue(Option.isNone(yield* orgs.findById(inside.id)))
      assert.deepStrictEqual(yield* orgs.findById(outside.id), Option.some(outside))
    }).pipe(Effect.provide(layerMemory))
  )

  it.effect("fibers forked inside a transaction join it", () =>
    Effect.gen(function* () {
      const tx = yield* Kernel.Transactor
      const orgs = yield* Orgs.OrgStore
      const a = makeOrg()
      const b = makeOrg()
      yield* Effect.flip(
        tx.withTransaction(
          Effect.gen(function* () {
            yield* Effect.all([orgs.insert(a), tx.withTransaction(orgs.insert(b))], { concurrency: "unbounded" })
            assert.isTrue(Option.isSome(yield* orgs.findById(b.id)))
            return yield* Effect.fail("roll back both")
          })
        )
      )
      assert.isTrue(Option.isNone(yield* orgs.findById(a.id)))
      assert.isTrue(Option.isNone(yield* orgs.findById(b.id)))
    }).pipe(Effect.provide(layerMemory))
  )

  it.effect("a fiber forked inside a transaction that outlives it writes like any writer outside", () =>
    Effect.gen(function* () {
      const tx = yield* Kernel.Transactor
      const orgs = yield* Orgs.OrgStore
      const late = makeOrg()
      const go = yield* Deferred.make<void>()
      const inSecond = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const straggler = yield* tx.withTransaction(
        Effect.forkDetach(Effect.andThen(Deferred.await(go), orgs.insert(late)))
      )
      const second = yield* Effect.forkChild(
        tx.withTransaction(
          Effect.gen(function* () {
            yield* Deferred.succeed(inSecond, undefined)
            yield* Deferred.await(release)
            return yield* Effect.fail("roll back the second transaction")
          })
        )
      )
      yield* Deferred.await(inSecond)
      yield* Deferred.succeed(go, undefined)
      yield* Effect.yieldNow
      yield* Deferred.succeed(release, undefined)
      yield* Effect.flip(Fiber.join(second))
      yield* Fiber.join(straggler)
      assert.deepStrictEqual(yield* orgs.findById(late.id), Option.some(late))
    }).pipe(Effect.provide(layerMemory))
  )

  it.effect("two memory stores share no state, and their transactions do not block each other", () =>
    Effect.gen(function* () {
      const org = makeOrg()
      const inner = Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const tx = yield* Kernel.Transactor
        return yield* tx.withTransaction(orgs.findById(org.id))
      }).pipe(Effect.provide(Layer.fresh(layerMemory)))
      const found = yield* Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const tx = yield* Kernel.Transactor
        return yield* tx.withTransaction(Effect.andThen(orgs.insert(org), inner))
      }).pipe(Effect.provide(layerMemory), Effect.timeout("2 seconds"))
      assert.isTrue(Option.isNone(found))
    })
  )

  it.effect("a table first used inside a failed transaction or savepoint is rolled back with the others", () =>
    Effect.gen(function* () {
      const store = yield* MemoryState
      const tx = yield* Kernel.Transactor
      const orgs = yield* Orgs.OrgStore
      const kept = makeOrg()
      const dropped = makeOrg()
      const notesOf = read(store, (tables) => [...tables(notes)])
      yield* Effect.flip(
        tx.withTransaction(
          Effect.gen(function* () {
            yield* orgs.insert(dropped)
            yield* write(store, (tables) => tables(notes).set("a", "failed transaction"))
            assert.deepStrictEqual(yield* notesOf, [["a", "failed transaction"]])
            return yield* Effect.fail("roll back")
          })
        )
      )
      assert.deepStrictEqual(yield* notesOf, [])
      assert.isTrue(Option.isNone(yield* orgs.findById(dropped.id)))
      yield* tx.withTransaction(
        Effect.gen(function* () {
          yield* write(store, (tables) => tables(notes).set("b", "outer"))
          yield* Effect.flip(
            tx.withTransaction(
              Effect.gen(function* () {
                yield* orgs.insert(kept)
                yield* write(store, (tables) => tables(notes).set("c", "savepoint"))
                return yield* Effect.fail("roll back the savepoint")
              })
            )
          )
          yield* orgs.insert(kept)
        })
      )
      assert.deepStrictEqual(yield* notesOf, [["b", "outer"]])
      assert.deepStrictEqual(yield* orgs.findById(kept.id), Option.some(kept))
    }).pipe(
      Effect.provide(
        Layer.mergeAll(OrgStoreMemory.layer, TransactorMemory.layer).pipe(Layer.provideMerge(MemoryState.layer))
      )
    )
  )
})
