import { assert, describe, it } from "@effect/vitest"
import { Identity } from "@hostplane/core"
import { Duration, Effect } from "effect"
import { TestClock } from "effect/testing"
import { signIn, withCore } from "./support/CoreMemory.ts"

/** What only a controlled clock shows; every other identity rule is tested through HTTP (identity.test.ts). */
describe("Identity (spec 4.1) on the memory store", () => {
  it.effect("a session authenticates until its 30 days run out, then it is 401 unauthorized", () =>
    withCore()(
      Effect.gen(function* () {
        const identity = yield* Identity.Identity
        const { session } = yield* signIn("frank")
        yield* TestClock.adjust(Duration.subtract(Duration.days(30), Duration.millis(1)))
        assert.strictEqual((yield* identity.authenticate(session.token)).subject, "frank")
        yield* TestClock.adjust(Duration.millis(1))
        const error = yield* Effect.flip(identity.authenticate(session.token))
        assert.strictEqual(error._tag, "Unauthorized")
      })
    )
  )
})
