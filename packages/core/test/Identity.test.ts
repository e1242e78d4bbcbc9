import { assert, describe, it } from "@effect/vitest"
import { Identity, Orgs } from "@hostplane/core"
import { Duration, Effect } from "effect"
import { TestClock } from "effect/testing"
import { signIn, withCore } from "./support/CoreMemory.ts"

describe("Identity (spec 4.1) on the memory store", () => {
  it.effect("dev login creates the user and a personal org with the caller as admin", () =>
    withCore()(
      Effect.gen(function* () {
        const identity = yield* Identity.Identity
        const { actor, session } = yield* signIn("alice", { email: "alice@example.test", name: "Alice" })
        assert.strictEqual(session.subject, "alice")
        assert.strictEqual(session.userId, actor.userId)
        assert.strictEqual(session.expiresAt, "2030-01-31T00:00:00.000Z")
        const me = yield* identity.me(actor)
        assert.deepStrictEqual(me.user, {
          id: actor.userId,
          provider: "dev",
          subject: "alice",
          email: "alice@example.test",
          name: "Alice"
        })
        assert.deepStrictEqual(me.orgs, [
          {
            slug: "alice",
            name: "Alice",
            plan: "free",
            personal: true,
            createdAt: "2030-01-01T00:00:00.000Z",
            role: "admin",
            projectLimit: 3
          }
        ])
      })
    )
  )

  it.effect("same subject returns the same user, and no second personal org", () =>
    withCore()(
      Effect.gen(function* () {
        const identity = yield* Identity.Identity
        const first = yield* signIn("bob")
        const second = yield* signIn("bob")
        assert.strictEqual(second.actor.userId, first.actor.userId)
        assert.notStrictEqual(second.session.token, first.session.token)
        const me = yield* identity.me(second.actor)
        assert.strictEqual(me.orgs.length, 1)
        assert.isTrue(me.orgs[0]?.personal)
      })
    )
  )

  it.effect("a personal org without a name is named after the subject", () =>
    withCore()(
      Effect.gen(function* () {
        const { actor } = yield* signIn("carol")
        const orgs = yield* (yield* Orgs.Orgs).list(actor)
        assert.deepStrictEqual(
          orgs.map((org) => [org.slug, org.name]),
          [["carol", "carol"]]
        )
      })
    )
  )

  it.effect("a personal org whose derived slug is taken gets a suffix", () =>
    withCore()(
      Effect.gen(function* () {
        const first = yield* signIn("dave-1", { name: "Dave" })
        const second = yield* signIn("dave-2", { name: "Dave" })
        const [a] = yield* (yield* Orgs.Orgs).list(first.actor)
        const [b] = yield* (yield* Orgs.Orgs).list(second.actor)
        assert.strictEqual(a?.slug, "dave")
        assert.match(b?.slug ?? "", /^dave-[a-z0-9]{1,5}$/)
      })
    )
  )

  it.effect("a later login updates the profile it brings and keeps the rest", () =>
    withCore()(
      Effect.gen(function* () {
        const identity = yield* Identity.Identity
        yield* signIn("erin", { name: "Erin" })
        const { actor } = yield* signIn("erin", { email: "erin@example.test" })
        const me = yield* identity.me(actor)
        assert.strictEqual(me.user.email, "erin@example.test")
        assert.strictEqual(me.user.name, "Erin")
      })
    )
  )

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

  it.effect("an unknown token is 401 unauthorized", () =>
    withCore()(
      Effect.gen(function* () {
        const error = yield* Effect.flip((yield* Identity.Identity).authenticate("not-a-token"))
        assert.strictEqual(error._tag, "Unauthorized")
      })
    )
  )
})
