import { assert, describe, it } from "@effect/vitest"
import { Idempotency, Kernel } from "@hostplane/core"
import { IdempotencyStoreMemory, MemoryState } from "@hostplane/testkit"
import { Duration, Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"

const target = { method: "POST", path: "/v1/orgs" }

const response: Idempotency.StoredResponse = {
  status: 201,
  headers: { "content-type": "application/json" },
  body: new TextEncoder().encode('{"slug":"acme"}')
}

const withKeys = <A, E>(test: Effect.Effect<A, E, Idempotency.Idempotency>) =>
  Effect.andThen(TestClock.setTime(Date.UTC(2030, 0, 1)), test).pipe(
    Effect.provide(
      Idempotency.Idempotency.layerWith({ lease: Duration.seconds(30), maxWait: Duration.minutes(10) }).pipe(
        Layer.provide(IdempotencyStoreMemory.layer),
        Layer.provide(Layer.mergeAll(MemoryState.layer, Kernel.Tokens.layer))
      )
    )
  )

describe("Idempotency (the Idempotency-Key bookkeeping)", () => {
  it.effect("a retry waits while the first attempt runs, then gets its answer", () =>
    withKeys(
      Effect.gen(function* () {
        const keys = yield* Idempotency.Idempotency
        const first = yield* keys.begin("usr_a", "k1", target)
        assert.strictEqual(first._tag, "Run")
        if (first._tag !== "Run") return
        const retry = yield* Effect.forkChild(keys.begin("usr_a", "k1", target))
        yield* TestClock.adjust(Duration.seconds(5))
        assert.isUndefined(retry.pollUnsafe())
        yield* keys.complete(first.claim, { bodySha256: "ab".repeat(32), response })
        yield* TestClock.adjust(Duration.seconds(2))
        const done = yield* Fiber.join(retry)
        assert.strictEqual(done._tag, "Done")
        if (done._tag === "Done") assert.strictEqual(done.record.response?.status, 201)
      })
    )
  )

  it.effect("an attempt that holds the key renews its lease: a retry after 2 minutes still waits for it", () =>
    withKeys(
      Effect.gen(function* () {
        const keys = yield* Idempotency.Idempotency
        const first = yield* keys.begin("usr_a", "k2", target)
        if (first._tag !== "Run") return assert.fail("the first attempt runs")
        const running = yield* Effect.forkChild(keys.holding(first.claim, Effect.never))
        yield* TestClock.adjust(Duration.minutes(2))
        const retry = yield* Effect.forkChild(keys.begin("usr_a", "k2", target))
        yield* TestClock.adjust(Duration.seconds(2))
        assert.isUndefined(retry.pollUnsafe())
        yield* Fiber.interrupt(running)
        yield* Fiber.interrupt(retry)
      })
    )
  )

  it.effect("a dead attempt (no renewal) is taken over once its lease lapses", () =>
    withKeys(
      Effect.gen(function* () {
        const keys = yield* Idempotency.Idempotency
        const first = yield* keys.begin("usr_a", "k3", target)
        assert.strictEqual(first._tag, "Run")
        const retry = yield* Effect.forkChild(keys.begin("usr_a", "k3", target))
        yield* TestClock.adjust(Duration.seconds(31))
        const taken = yield* Fiber.join(retry)
        assert.strictEqual(taken._tag, "Run")
      })
    )
  )

  it.effect("a retry gives up with 409 idempotency_key_in_use after maxWait", () =>
    withKeys(
      Effect.gen(function* () {
        const keys = yield* Idempotency.Idempotency
        const first = yield* keys.begin("usr_a", "k4", target)
        if (first._tag !== "Run") return assert.fail("the first attempt runs")
        const running = yield* Effect.forkChild(keys.holding(first.claim, Effect.never))
        const retry = yield* Effect.forkChild(Effect.flip(keys.begin("usr_a", "k4", target)))
        yield* TestClock.adjust(Duration.minutes(11))
        const error = yield* Fiber.join(retry)
        assert.strictEqual(error._tag, "IdempotencyKeyInUse")
        yield* Fiber.interrupt(running)
      })
    )
  )

  it.effect("release lets the next request with the key run afresh", () =>
    withKeys(
      Effect.gen(function* () {
        const keys = yield* Idempotency.Idempotency
        const first = yield* keys.begin("usr_a", "k5", target)
        if (first._tag !== "Run") return assert.fail("the first attempt runs")
        yield* keys.release(first.claim)
        assert.strictEqual((yield* keys.begin("usr_a", "k5", target))._tag, "Run")
      })
    )
  )
})
