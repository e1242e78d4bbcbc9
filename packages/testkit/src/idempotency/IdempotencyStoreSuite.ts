import { assert, layer } from "@effect/vitest"
import { Idempotency } from "@hostplane/core"
import { Effect, type Layer, Option } from "effect"
import { at, day, minute, randomSuffix, uniqueId } from "../contract/Fixtures.ts"

const claimInput = (overrides: Partial<Idempotency.ClaimInput> = {}): Idempotency.ClaimInput => ({
  userId: uniqueId("usr"),
  key: `key-${randomSuffix()}`,
  method: "POST",
  path: "/v1/orgs",
  claimId: uniqueId("idk"),
  now: at(0),
  leaseUntil: at(minute / 2),
  expiresAt: at(day),
  ...overrides
})

const response: Idempotency.StoredResponse = {
  status: 201,
  headers: { "content-type": "application/json", location: "/v1/orgs/acme" },
  body: new TextEncoder().encode(`{"slug":"acme","bytes":"\u0000\u00ff"}`)
}

/** The `IdempotencyStore` contract: every adapter must pass it; users and keys are unique per test. */
export const idempotencyStoreSuite = <E>(name: string, store: Layer.Layer<Idempotency.IdempotencyStore, E>): void =>
  layer(store)(`${name}: IdempotencyStore contract`, (it) => {
    it.effect("the first claim of a key holds it; a second one answers the running record", () =>
      Effect.gen(function* () {
        const keys = yield* Idempotency.IdempotencyStore
        const first = claimInput()
        assert.isTrue(Option.isNone(yield* keys.claim(first)))
        const second = yield* keys.claim({ ...first, claimId: uniqueId("idk"), method: "PUT", path: "/v1/other" })
        assert.deepStrictEqual(Option.getOrThrow(second), {
          userId: first.userId,
          key: first.key,
          method: "POST",
          path: "/v1/orgs",
          claimId: first.claimId,
          leaseUntil: first.leaseUntil,
          bodySha256: null,
          response: null,
          createdAt: first.now,
          expiresAt: first.expiresAt
        })
      })
    )

    it.effect("complete keeps the body hash and the response byte for byte; later claims answer it", () =>
      Effect.gen(function* () {
        const keys = yield* Idempotency.IdempotencyStore
        const first = claimInput()
        yield* keys.claim(first)
        yield* keys.complete(first.userId, first.key, first.claimId, { bodySha256: "ab".repeat(32), response })
        // Even past the lease: a finished record is never taken over.
        const later = Option.getOrThrow(yield* keys.claim({ ...first, claimId: uniqueId("idk"), now: at(minute) }))
        assert.strictEqual(later.bodySha256, "ab".repeat(32))
        assert.strictEqual(later.response?.status, 201)
        assert.deepStrictEqual(later.response?.headers, response.headers)
        assert.deepStrictEqual([...(later.response?.body ?? [])], [...response.body])
      })
    )

    it.effect("release forgets a running attempt: the next claim holds the key", () =>
      Effect.gen(function* () {
        const keys = yield* Idempotency.IdempotencyStore
        const first = claimInput()
        yield* keys.claim(first)
        yield* keys.release(first.userId, first.key, first.claimId)
        assert.isTrue(Option.isNone(yield* keys.claim({ ...first, claimId: uniqueId("idk") })))
      })
    )

    it.effect(
      "a running attempt whose lease lapsed is taken over; the old claim can then neither complete nor release",
      () =>
        Effect.gen(function* () {
          const keys = yield* Idempotency.IdempotencyStore
          const first = claimInput()
          yield* keys.claim(first)
          const takeover = { ...first, claimId: uniqueId("idk"), now: at(minute), leaseUntil: at(minute + minute / 2) }
          assert.isTrue(Option.isNone(yield* keys.claim(takeover)))
          yield* keys.complete(first.userId, first.key, first.claimId, { bodySha256: "00".repeat(32), response })
          yield* keys.release(first.userId, first.key, first.claimId)
          const held = Option.getOrThrow(yield* keys.claim({ ...first, claimId: uniqueId("idk"), now: at(minute) }))
          assert.strictEqual(held.claimId, takeover.claimId)
          assert.isNull(held.response)
        })
    )

    it.effect("renew extends the lease of the holder only", () =>
      Effect.gen(function* () {
        const keys = yield* Idempotency.IdempotencyStore
        const first = claimInput()
        yield* keys.claim(first)
        yield* keys.renew(first.userId, first.key, uniqueId("idk"), at(10 * minute))
        yield* keys.renew(first.userId, first.key, first.claimId, at(2 * minute))
        const held = Option.getOrThrow(yield* keys.claim({ ...first, claimId: uniqueId("idk"), now: at(minute) }))
        assert.strictEqual(held.leaseUntil, at(2 * minute))
        assert.isTrue(Option.isNone(yield* keys.claim({ ...first, claimId: uniqueId("idk"), now: at(2 * minute) })))
      })
    )

    it.effect("a finished key expires: past expiresAt it is claimed afresh", () =>
      Effect.gen(function* () {
        const keys = yield* Idempotency.IdempotencyStore
        const first = claimInput()
        yield* keys.claim(first)
        yield* keys.complete(first.userId, first.key, first.claimId, { bodySha256: "ab".repeat(32), response })
        const next = { ...first, claimId: uniqueId("idk"), now: at(day), leaseUntil: at(day + minute) }
        assert.isTrue(Option.isNone(yield* keys.claim({ ...next, expiresAt: at(2 * day) })))
        const held = Option.getOrThrow(yield* keys.claim({ ...next, claimId: uniqueId("idk") }))
        assert.strictEqual(held.claimId, next.claimId)
        assert.strictEqual(held.expiresAt, at(2 * day))
      })
    )

    it.effect("keys belong to one user: the same key of another user is its own", () =>
      Effect.gen(function* () {
        const keys = yield* Idempotency.IdempotencyStore
        const first = claimInput()
        yield* keys.claim(first)
        assert.isTrue(Option.isNone(yield* keys.claim({ ...first, userId: uniqueId("usr"), claimId: uniqueId("idk") })))
      })
    )
  })
