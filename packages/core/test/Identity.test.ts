import { assert, describe, it } from "@effect/vitest"
import { Identity, type Kernel, type Orgs, servicesWith } from "@hostplane/core"
import { Duration, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { memoryPorts, signIn, start, withCore } from "./support/CoreMemory.ts"

/** The memory user store, counting its identity lookups. */
const readsOfIdentity = { count: 0 }
const countingUsers = Layer.effect(
  Identity.UserStore,
  Effect.map(Effect.service(Identity.UserStore), (users) =>
    Identity.UserStore.of({
      ...users,
      findByIdentity: (provider, subject) => {
        readsOfIdentity.count++
        return users.findByIdentity(provider, subject)
      }
    })
  )
)
const coreCountingReads = servicesWith([]).pipe(Layer.provideMerge(countingUsers.pipe(Layer.provideMerge(memoryPorts))))

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

  it.effect("a host's steady caller reads no store; a changed profile is written, a user change read again", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(start)
      const identity = yield* Identity.Identity
      const cache = yield* Identity.AuthCache
      const host = { provider: "host", subject: "7", email: "ada@host.test", name: "Ada" }
      readsOfIdentity.count = 0
      const first = yield* identity.actorOf(host)
      assert.strictEqual(readsOfIdentity.count, 2, "first sight: the lookup, then the one inside the creation")
      // The creation changed the user while the first call ran: it keeps nothing, the next call reads once.
      assert.deepStrictEqual(yield* identity.actorOf(host), first)
      assert.strictEqual(readsOfIdentity.count, 3)
      for (let i = 0; i < 5; i++) assert.deepStrictEqual(yield* identity.actorOf(host), first)
      assert.strictEqual(readsOfIdentity.count, 3, "held: no read")

      const renamed = yield* identity.actorOf({ ...host, name: "Ada L." })
      assert.strictEqual(renamed.userId, first.userId)
      assert.strictEqual(renamed.name, "Ada L.")
      const users = yield* Identity.UserStore
      const stored = yield* users.findByIdentity("host", "7")
      assert.strictEqual(stored._tag === "Some" && stored.value.name, "Ada L.")
      // The host still sends the old name: it is written back, not answered from the held entry.
      assert.strictEqual((yield* identity.actorOf(host)).name, "Ada")

      assert.strictEqual((yield* identity.actorOf(host)).name, "Ada")
      const before = readsOfIdentity.count
      assert.strictEqual((yield* identity.actorOf(host)).name, "Ada")
      assert.strictEqual(readsOfIdentity.count, before, "held again")
      yield* cache.changed(Identity.AuthChange.user(first.userId))
      yield* identity.actorOf(host)
      assert.strictEqual(readsOfIdentity.count, before + 1, "a change of the user is read again")
    }).pipe(Effect.provide(coreCountingReads))
  )

  it("a load keeps its result unless a change heard while it ran concerns it", () => {
    const cache = Identity.AuthCache.make({ ttl: "1 minute" })
    const actor = { userId: "u1" as Kernel.UserId, provider: "dev", subject: "ada", email: null, name: null }
    const rows = [{ org: { id: "o1" } }] as unknown as ReadonlyArray<Orgs.MembershipRow>
    const loadWhile = (changes: ReadonlyArray<Identity.AuthChange>) => {
      cache.invalidate(Identity.AuthChange.all)
      const ticket = cache.ticket()
      for (const change of changes) cache.invalidate(change)
      cache.keepBearer(ticket, "hash", { actor, expiresAt: null }, 0)
      cache.keepMemberships(ticket, "u1", rows, 0)
      return { bearer: cache.bearer("hash", 1) !== undefined, memberships: cache.memberships("u1", 1) !== undefined }
    }
    const others = [Identity.AuthChange.user("u2"), Identity.AuthChange.org("o2")]
    assert.deepStrictEqual(loadWhile(others), { bearer: true, memberships: true })
    assert.deepStrictEqual(loadWhile([...others, Identity.AuthChange.user("u1")]), {
      bearer: false,
      memberships: false
    })
    assert.deepStrictEqual(loadWhile([Identity.AuthChange.org("o1")]), { bearer: true, memberships: false })
    assert.deepStrictEqual(loadWhile([Identity.AuthChange.all]), { bearer: false, memberships: false })
    // More changes than it remembers: it cannot tell, so it keeps nothing.
    const many = Array.from({ length: 300 }, (_, i) => Identity.AuthChange.user(`other-${i}`))
    assert.deepStrictEqual(loadWhile(many), { bearer: false, memberships: false })
  })
})
