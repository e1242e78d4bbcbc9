import { assert, describe, it } from "@effect/vitest"
import { Jobs, Kernel, Mail, Orgs } from "@hostplane/core"
import { Duration, Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { auditOf, inviteMail, inviteToken, memberOf, orgIdOf, signIn, withCore } from "./support/CoreMemory.ts"

/** An org `team` (named "Team") administered by alice. */
const team = Effect.gen(function* () {
  const { actor: admin } = yield* signIn("alice")
  yield* (yield* Orgs.Orgs).create(admin, { name: "Team", slug: "team" })
  return admin
})

const invite = (admin: Kernel.Actor, email: string, role: Kernel.Role = "member") =>
  Effect.flatMap(Orgs.Invites, (invites) => invites.create(admin, "team", { email, role }))

describe("Invites (spec 4.2 and part 3) on the memory store", () => {
  it.effect("a new invite is 201: pending, sentAt empty, the token only in the queued email link", () =>
    withCore()(
      Effect.gen(function* () {
        const admin = yield* team
        const { invite: created, created: isNew } = yield* invite(admin, "bob@example.test", "viewer")
        assert.isTrue(isNew)
        assert.deepStrictEqual(
          { ...created, inviteId: "" },
          {
            inviteId: "",
            email: "bob@example.test",
            role: "viewer",
            state: "pending",
            expiresAt: "2030-01-08T00:00:00.000Z",
            sentAt: null,
            createdAt: "2030-01-01T00:00:00.000Z"
          }
        )
        assert.match(created.inviteId, /^inv_/)
        const mail = yield* inviteMail("team", created.inviteId)
        assert.strictEqual(mail.to, "bob@example.test")
        assert.strictEqual(mail.state, "queued")
        assert.include(mail.subject, "Team")
        const token = yield* inviteToken("team", created.inviteId)
        assert.strictEqual(Buffer.from(token, "base64url").length, 32)
        assert.notInclude(JSON.stringify(created), token)
        const listed = yield* (yield* Orgs.Invites).list(admin, "team")
        assert.deepStrictEqual(listed, [created])
      })
    )
  )

  it.effect(
    "a repeat for the same address updates the same row (200): same inviteId, new token and expiry, role may change",
    () =>
      withCore()(
        Effect.gen(function* () {
          const invites = yield* Orgs.Invites
          const admin = yield* team
          const first = yield* invite(admin, "bob@example.test", "viewer")
          const firstToken = yield* inviteToken("team", first.invite.inviteId)
          const firstMail = yield* inviteMail("team", first.invite.inviteId)
          yield* TestClock.adjust(Duration.days(1))
          const second = yield* invite(admin, "Bob@Example.test", "admin")
          assert.isFalse(second.created)
          assert.strictEqual(second.invite.inviteId, first.invite.inviteId)
          assert.strictEqual(second.invite.role, "admin")
          assert.strictEqual(second.invite.expiresAt, "2030-01-09T00:00:00.000Z")
          assert.strictEqual(second.invite.createdAt, first.invite.createdAt)
          const secondToken = yield* inviteToken("team", second.invite.inviteId)
          assert.notStrictEqual(secondToken, firstToken)
          assert.strictEqual((yield* Effect.flip(invites.view(firstToken)))._tag, "NotFound")
          assert.strictEqual((yield* invites.view(secondToken)).role, "admin")
          const old = Option.getOrThrow(yield* (yield* Mail.MailOutbox).get(firstMail.id))
          assert.strictEqual(old.state, "cancelled")
          assert.strictEqual((yield* invites.list(admin, "team")).length, 1)
          const audit = yield* auditOf("team", "member.invite")
          assert.deepStrictEqual(
            audit.map((e) => [e.target, e.data]),
            [
              [first.invite.inviteId, { role: "viewer", renewed: false }],
              [first.invite.inviteId, { role: "admin", renewed: true }]
            ]
          )
        })
      )
  )

  it.effect("inviting the address of a member is 409 already_member", () =>
    withCore()(
      Effect.gen(function* () {
        const admin = yield* team
        yield* memberOf(admin, "team", "bob", "member", { email: "bob@example.test" })
        const error = yield* Effect.flip(invite(admin, "BOB@example.test"))
        assert.strictEqual(error._tag, "AlreadyMember")
      })
    )
  )

  it.effect("an org may hold 50 pending invites: the 51st is 409 too_many_invites, a repeat still renews", () =>
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
        const error = yield* Effect.flip(invite(admin, "user50@example.test"))
        assert.strictEqual(error._tag, "TooManyInvites")
        assert.deepStrictEqual(error.details, { limit: 50 })
        const renewed = yield* invite(admin, "user7@example.test", "viewer")
        assert.isFalse(renewed.created)
        assert.strictEqual((yield* (yield* Orgs.Invites).list(admin, "team")).length, 50)
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

  it.effect(
    "DELETE invite is 204: revoked, the queued email is dropped, it leaves the list; audit member.uninvite",
    () =>
      withCore()(
        Effect.gen(function* () {
          const invites = yield* Orgs.Invites
          const admin = yield* team
          const { invite: created } = yield* invite(admin, "bob@example.test")
          const token = yield* inviteToken("team", created.inviteId)
          const mail = yield* inviteMail("team", created.inviteId)
          yield* invites.revoke(admin, "team", created.inviteId)
          assert.strictEqual(Option.getOrThrow(yield* (yield* Mail.MailOutbox).get(mail.id)).state, "cancelled")
          assert.deepStrictEqual(yield* invites.list(admin, "team"), [])
          assert.strictEqual((yield* invites.view(token)).state, "revoked")
          const audit = yield* auditOf("team", "member.uninvite")
          assert.deepStrictEqual(
            audit.map((e) => [e.actorId, e.target, e.data]),
            [[admin.userId, created.inviteId, {}]]
          )
        })
      )
  )

  it.effect("DELETE of an already revoked or accepted invite, or through another org, is 404", () =>
    withCore()(
      Effect.gen(function* () {
        const invites = yield* Orgs.Invites
        const admin = yield* team
        yield* (yield* Orgs.Orgs).create(admin, { name: "Other", slug: "other" })
        const revoked = (yield* invite(admin, "bob@example.test")).invite
        const accepted = (yield* invite(admin, "carol@example.test")).invite
        yield* invites.revoke(admin, "team", revoked.inviteId)
        const { actor: carol } = yield* signIn("carol")
        yield* invites.accept(carol, yield* inviteToken("team", accepted.inviteId))
        const pending = (yield* invite(admin, "dan@example.test")).invite
        assert.strictEqual((yield* Effect.flip(invites.revoke(admin, "team", revoked.inviteId)))._tag, "NotFound")
        assert.strictEqual((yield* Effect.flip(invites.revoke(admin, "team", accepted.inviteId)))._tag, "NotFound")
        assert.strictEqual((yield* Effect.flip(invites.revoke(admin, "other", pending.inviteId)))._tag, "NotFound")
        assert.strictEqual(
          (yield* Effect.flip(invites.revoke(admin, "team", Kernel.makeId("inv", "inv_unknown"))))._tag,
          "NotFound"
        )
      })
    )
  )

  it.effect("GET /v1/invites/{token} needs no login: org name, role and state; unknown token is 404", () =>
    withCore()(
      Effect.gen(function* () {
        const invites = yield* Orgs.Invites
        const admin = yield* team
        const { invite: created } = yield* invite(admin, "bob@example.test", "viewer")
        const view = yield* invites.view(yield* inviteToken("team", created.inviteId))
        assert.deepStrictEqual(view, {
          orgName: "Team",
          orgSlug: "team",
          role: "viewer",
          state: "pending",
          expiresAt: "2030-01-08T00:00:00.000Z"
        })
        assert.strictEqual((yield* Effect.flip(invites.view("unknown-token")))._tag, "NotFound")
      })
    )
  )

  it.effect("accept makes the caller a member with the invite role (alreadyMember false); audit member.accept", () =>
    withCore()(
      Effect.gen(function* () {
        const invites = yield* Orgs.Invites
        const admin = yield* team
        const { invite: created } = yield* invite(admin, "bob@example.test", "viewer")
        const token = yield* inviteToken("team", created.inviteId)
        const { actor: bob } = yield* signIn("someone-else", { email: "other@example.test" })
        const accepted = yield* invites.accept(bob, token)
        assert.isFalse(accepted.alreadyMember)
        assert.strictEqual(accepted.org.slug, "team")
        assert.strictEqual(accepted.org.role, "viewer")
        assert.strictEqual(accepted.org.projectLimit, 3)
        assert.isTrue((yield* (yield* Orgs.Orgs).list(bob)).some((m) => m.slug === "team" && m.role === "viewer"))
        assert.strictEqual((yield* invites.view(token)).state, "accepted")
        assert.deepStrictEqual(yield* invites.list(admin, "team"), [])
        const audit = yield* auditOf("team", "member.accept")
        assert.deepStrictEqual(
          audit.map((e) => [e.actorId, e.target, e.data]),
          [[bob.userId, created.inviteId, { role: "viewer", alreadyMember: false }]]
        )
      })
    )
  )

  it.effect("accept by someone already a member keeps the role and answers alreadyMember true", () =>
    withCore()(
      Effect.gen(function* () {
        const invites = yield* Orgs.Invites
        const admin = yield* team
        const { actor: bob } = yield* memberOf(admin, "team", "bob", "member")
        const { invite: created } = yield* invite(admin, "bob-other@example.test", "admin")
        const accepted = yield* invites.accept(bob, yield* inviteToken("team", created.inviteId))
        assert.isTrue(accepted.alreadyMember)
        assert.strictEqual(accepted.org.role, "member")
        assert.strictEqual(
          (yield* (yield* Orgs.OrgStore).findMembership(yield* orgIdOf("team"), bob.userId)).pipe(Option.getOrThrow),
          "member"
        )
      })
    )
  )

  it.effect("an accepted invite accepted again is 409 invite_used", () =>
    withCore()(
      Effect.gen(function* () {
        const invites = yield* Orgs.Invites
        const admin = yield* team
        const { invite: created } = yield* invite(admin, "bob@example.test")
        const token = yield* inviteToken("team", created.inviteId)
        const { actor: bob } = yield* signIn("bob")
        const { actor: carol } = yield* signIn("carol")
        yield* invites.accept(bob, token)
        assert.strictEqual((yield* Effect.flip(invites.accept(carol, token)))._tag, "InviteUsed")
        assert.strictEqual((yield* Effect.flip(invites.accept(bob, token)))._tag, "InviteUsed")
        assert.isFalse((yield* (yield* Orgs.Orgs).list(carol)).some((m) => m.slug === "team"))
      })
    )
  )

  it.effect("a revoked invite is 409 invite_revoked", () =>
    withCore()(
      Effect.gen(function* () {
        const invites = yield* Orgs.Invites
        const admin = yield* team
        const { invite: created } = yield* invite(admin, "bob@example.test")
        const token = yield* inviteToken("team", created.inviteId)
        yield* invites.revoke(admin, "team", created.inviteId)
        const { actor: bob } = yield* signIn("bob")
        assert.strictEqual((yield* Effect.flip(invites.accept(bob, token)))._tag, "InviteRevoked")
        assert.isFalse((yield* (yield* Orgs.Orgs).list(bob)).some((m) => m.slug === "team"))
      })
    )
  )

  it.effect("after seven days an invite is expired: 409 invite_expired, and it stays in the invite list", () =>
    withCore()(
      Effect.gen(function* () {
        const invites = yield* Orgs.Invites
        const admin = yield* team
        const { invite: created } = yield* invite(admin, "bob@example.test")
        const token = yield* inviteToken("team", created.inviteId)
        const { actor: bob } = yield* signIn("bob")
        yield* TestClock.adjust(Duration.subtract(Duration.days(7), Duration.millis(1)))
        assert.strictEqual((yield* invites.view(token)).state, "pending")
        yield* TestClock.adjust(Duration.millis(1))
        assert.strictEqual((yield* invites.view(token)).state, "expired")
        assert.strictEqual((yield* Effect.flip(invites.accept(bob, token)))._tag, "InviteExpired")
        const listed = yield* invites.list(admin, "team")
        assert.deepStrictEqual(
          listed.map((i) => [i.inviteId, i.state]),
          [[created.inviteId, "expired"]]
        )
        assert.isFalse((yield* (yield* Orgs.Orgs).list(bob)).some((m) => m.slug === "team"))
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

  it.effect("sentAt is set once the invitation email went out", () => {
    const delivered: Array<Mail.MailMessage> = []
    const transport = Layer.succeed(Mail.MailTransport, {
      send: (message) => Effect.sync(() => void delivered.push(message))
    })
    return withCore()(
      Effect.gen(function* () {
        const invites = yield* Orgs.Invites
        const admin = yield* team
        const { invite: created } = yield* invite(admin, "bob@example.test")
        assert.strictEqual((yield* invites.list(admin, "team"))[0]?.sentAt, null)
        yield* TestClock.adjust(Duration.seconds(5))
        assert.strictEqual(yield* Jobs.JobRunner.runOnce([Mail.sendMailHandler()]), 1)
        assert.deepStrictEqual(
          delivered.map((m) => m.to),
          ["bob@example.test"]
        )
        const [listed] = yield* invites.list(admin, "team")
        assert.strictEqual(listed?.inviteId, created.inviteId)
        assert.strictEqual(listed?.sentAt, "2030-01-01T00:00:05.000Z")
      }).pipe(Effect.provide(transport))
    )
  })

  it.effect("audit rows never hold the invite email, the token or its hash", () =>
    withCore()(
      Effect.gen(function* () {
        const invites = yield* Orgs.Invites
        const tokens = yield* Kernel.Tokens
        const admin = yield* team
        const emails = ["secret.person@example.test", "other.person@example.test", "third.person@example.test"]
        const first = yield* invite(admin, emails[0] as string)
        const firstToken = yield* inviteToken("team", first.invite.inviteId)
        const renewed = yield* invite(admin, emails[0] as string, "admin")
        const renewedToken = yield* inviteToken("team", renewed.invite.inviteId)
        const second = yield* invite(admin, emails[1] as string)
        yield* invites.revoke(admin, "team", second.invite.inviteId)
        const third = yield* invite(admin, emails[2] as string)
        const thirdToken = yield* inviteToken("team", third.invite.inviteId)
        const { actor: bob } = yield* signIn("bob")
        yield* invites.accept(bob, renewedToken)
        yield* Effect.flip(invites.accept(bob, renewedToken))
        const { actor: carol } = yield* signIn("carol")
        yield* invites.accept(carol, thirdToken)
        const secrets = [
          ...emails,
          firstToken,
          renewedToken,
          thirdToken,
          yield* tokens.hash(firstToken),
          yield* tokens.hash(renewedToken),
          yield* tokens.hash(thirdToken)
        ]
        const audit = yield* (yield* Kernel.AuditLog).list({})
        assert.deepStrictEqual([...new Set(audit.map((e) => e.action))].sort(), [
          "member.accept",
          "member.invite",
          "member.uninvite",
          "org.create"
        ])
        const serialized = JSON.stringify(audit).toLowerCase()
        for (const secret of secrets) assert.notInclude(serialized, secret.toLowerCase())
      })
    )
  )
})
