import { assert, describe, it } from "@effect/vitest"
import { type Kernel, Orgs } from "@hostplane/core"
import { Duration, Effect } from "effect"
import { TestClock } from "effect/testing"
import { inviteToken, signIn, withCore } from "./support/CoreMemory.ts"

/** An org `team` (named "Team") administered by alice. */
const team = Effect.gen(function* () {
  const { actor: admin } = yield* signIn("alice")
  yield* (yield* Orgs.Orgs).create(admin, { name: "Team", slug: "team" })
  return admin
})

const invite = (admin: Kernel.Actor, email: string, role: Kernel.Role = "member") =>
  Effect.flatMap(Orgs.Invites, (invites) => invites.create(admin, "team", { email, role }))

/** What only a controlled clock shows; every other invite rule is tested through HTTP (http/test/invites.test.ts). */
describe("Invites (spec 4.2 and part 3): expiry on the memory store", () => {
  it.effect("a repeat a day later renews the expiry: seven days from the repeat", () =>
    withCore()(
      Effect.gen(function* () {
        const admin = yield* team
        const first = yield* invite(admin, "bob@example.test", "viewer")
        assert.strictEqual(first.invite.expiresAt, "2030-01-08T00:00:00.000Z")
        yield* TestClock.adjust(Duration.days(1))
        const second = yield* invite(admin, "Bob@Example.test", "admin")
        assert.strictEqual(second.invite.inviteId, first.invite.inviteId)
        assert.strictEqual(second.invite.expiresAt, "2030-01-09T00:00:00.000Z")
      })
    )
  )

  it.effect("an invite is pending until seven days have passed and expired from then on", () =>
    withCore()(
      Effect.gen(function* () {
        const invites = yield* Orgs.Invites
        const admin = yield* team
        const { invite: created } = yield* invite(admin, "bob@example.test")
        const token = yield* inviteToken("team", created.inviteId)
        yield* TestClock.adjust(Duration.subtract(Duration.days(7), Duration.millis(1)))
        assert.strictEqual((yield* invites.view(token)).state, "pending")
        yield* TestClock.adjust(Duration.millis(1))
        assert.strictEqual((yield* invites.view(token)).state, "expired")
      })
    )
  )

  it.effect("expired invites do not count toward the 50 pending", () =>
    withCore()(
      Effect.gen(function* () {
        const admin = yield* team
        yield* Effect.forEach(
          Array.from({ length: 50 }, (_, i) => i),
          (i) => invite(admin, `user${i}@example.test`),
          {
            discard: true
          }
        )
        yield* TestClock.adjust(Duration.days(7))
        const fresh = yield* invite(admin, "late@example.test")
        assert.isTrue(fresh.created)
      })
    )
  )

  it.effect("renewing an expired invite counts against the 50 pending: at the limit it is 409 too_many_invites", () =>
    withCore()(
      Effect.gen(function* () {
        const admin = yield* team
        yield* invite(admin, "old@example.test")
        yield* TestClock.adjust(Duration.days(7))
        yield* Effect.forEach(
          Array.from({ length: 50 }, (_, i) => i),
          (i) => invite(admin, `user${i}@example.test`),
          { discard: true }
        )
        const error = yield* Effect.flip(invite(admin, "old@example.test"))
        assert.strictEqual(error._tag, "TooManyInvites")
      })
    )
  )

  it.effect("renewing an expired invite makes it pending again with a fresh seven days", () =>
    withCore()(
      Effect.gen(function* () {
        const invites = yield* Orgs.Invites
        const admin = yield* team
        const first = yield* invite(admin, "bob@example.test")
        yield* TestClock.adjust(Duration.days(8))
        const renewed = yield* invite(admin, "bob@example.test")
        assert.isFalse(renewed.created)
        assert.strictEqual(renewed.invite.inviteId, first.invite.inviteId)
        assert.strictEqual(renewed.invite.state, "pending")
        assert.strictEqual(renewed.invite.expiresAt, "2030-01-16T00:00:00.000Z")
        const { actor: bob } = yield* signIn("bob")
        const accepted = yield* invites.accept(bob, yield* inviteToken("team", renewed.invite.inviteId))
        assert.isFalse(accepted.alreadyMember)
      })
    )
  )

  it.effect("the invite list shows pending and expired invites, newest first, but not accepted or revoked ones", () =>
    withCore()(
      Effect.gen(function* () {
        const invites = yield* Orgs.Invites
        const admin = yield* team
        const expired = (yield* invite(admin, "old@example.test")).invite
        yield* TestClock.adjust(Duration.days(6))
        const accepted = (yield* invite(admin, "acc@example.test")).invite
        const revoked = (yield* invite(admin, "rev@example.test")).invite
        yield* TestClock.adjust(Duration.hours(1))
        const pending = (yield* invite(admin, "new@example.test")).invite
        yield* TestClock.adjust(Duration.days(1))
        const { actor: bob } = yield* signIn("bob")
        yield* invites.revoke(admin, "team", revoked.inviteId)
        yield* invites.accept(bob, yield* inviteToken("team", accepted.inviteId))
        const listed = yield* invites.list(admin, "team")
        assert.deepStrictEqual(
          listed.map((i) => [i.email, i.state]),
          [
            [pending.email, "pending"],
            [expired.email, "expired"]
          ]
        )
      })
    )
  )
})
