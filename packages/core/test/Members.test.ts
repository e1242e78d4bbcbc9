import { assert, describe, it } from "@effect/vitest"
import { Orgs } from "@hostplane/core"
import { Effect } from "effect"
import { auditOf, memberOf, signIn, withCore } from "./support/CoreMemory.ts"

/** An org `team` administered by alice. */
const team = Effect.gen(function* () {
  const { actor: admin } = yield* signIn("alice")
  yield* (yield* Orgs.Orgs).create(admin, { name: "Team", slug: "team" })
  return admin
})

describe("Members (spec 4.2) on the memory store", () => {
  it.effect("POST members adds an existing user by provider plus subject: 201 Member, audit member.add", () =>
    withCore()(
      Effect.gen(function* () {
        const members = yield* Orgs.Members
        const admin = yield* team
        const { actor: bob } = yield* signIn("bob", { email: "bob@example.test", name: "Bob" })
        const member = yield* members.add(admin, "team", { provider: "dev", subject: "bob", role: "viewer" })
        assert.deepStrictEqual(member, {
          userId: bob.userId,
          provider: "dev",
          subject: "bob",
          email: "bob@example.test",
          name: "Bob",
          role: "viewer",
          joinedAt: "2030-01-01T00:00:00.000Z"
        })
        const audit = yield* auditOf("team", "member.add")
        assert.deepStrictEqual(
          audit.map((e) => [e.actorId, e.target, e.data]),
          [[admin.userId, bob.userId, { role: "viewer" }]]
        )
        assert.isTrue((yield* (yield* Orgs.Orgs).list(bob)).some((m) => m.slug === "team" && m.role === "viewer"))
      })
    )
  )

  it.effect("adding an unknown user is 404 user_not_found", () =>
    withCore()(
      Effect.gen(function* () {
        const admin = yield* team
        const error = yield* Effect.flip(
          (yield* Orgs.Members).add(admin, "team", { provider: "dev", subject: "nobody", role: "member" })
        )
        assert.strictEqual(error._tag, "UserNotFound")
      })
    )
  )

  it.effect("adding someone who already is a member is 409 already_member", () =>
    withCore()(
      Effect.gen(function* () {
        const admin = yield* team
        yield* memberOf(admin, "team", "bob", "member")
        const error = yield* Effect.flip(
          (yield* Orgs.Members).add(admin, "team", { provider: "dev", subject: "bob", role: "admin" })
        )
        assert.strictEqual(error._tag, "AlreadyMember")
        assert.strictEqual((yield* auditOf("team", "member.add")).length, 1)
      })
    )
  )

  it.effect("adding needs admin: a member is 403, an outsider is 404", () =>
    withCore()(
      Effect.gen(function* () {
        const members = yield* Orgs.Members
        const admin = yield* team
        const { actor: member } = yield* memberOf(admin, "team", "bob", "member")
        const { actor: outsider } = yield* signIn("eve")
        yield* signIn("carol")
        const input = { provider: "dev", subject: "carol", role: "viewer" } as const
        assert.strictEqual((yield* Effect.flip(members.add(member, "team", input)))._tag, "Forbidden")
        assert.strictEqual((yield* Effect.flip(members.add(outsider, "team", input)))._tag, "NotFound")
      })
    )
  )

  it.effect("GET members needs member: a viewer is 403, an outsider is 404", () =>
    withCore()(
      Effect.gen(function* () {
        const members = yield* Orgs.Members
        const admin = yield* team
        const { actor: member } = yield* memberOf(admin, "team", "bob", "member")
        const { actor: viewer } = yield* memberOf(admin, "team", "vic", "viewer")
        const { actor: outsider } = yield* signIn("eve")
        const listed = yield* members.list(member, "team")
        assert.deepStrictEqual(listed.map((m) => [m.subject, m.role]).sort(), [
          ["alice", "admin"],
          ["bob", "member"],
          ["vic", "viewer"]
        ])
        assert.strictEqual((yield* Effect.flip(members.list(viewer, "team")))._tag, "Forbidden")
        assert.strictEqual((yield* Effect.flip(members.list(outsider, "team")))._tag, "NotFound")
      })
    )
  )

  it.effect("PUT role changes the role: 200 Member, audit member.role", () =>
    withCore()(
      Effect.gen(function* () {
        const members = yield* Orgs.Members
        const admin = yield* team
        const { actor: bob } = yield* memberOf(admin, "team", "bob", "viewer")
        const member = yield* members.setRole(admin, "team", bob.userId, "admin")
        assert.strictEqual(member.role, "admin")
        assert.strictEqual(member.userId, bob.userId)
        const audit = yield* auditOf("team", "member.role")
        assert.deepStrictEqual(
          audit.map((e) => [e.actorId, e.target, e.data]),
          [[admin.userId, bob.userId, { from: "viewer", role: "admin" }]]
        )
      })
    )
  )

  it.effect("demoting the last admin (self included) is 409 last_admin", () =>
    withCore()(
      Effect.gen(function* () {
        const members = yield* Orgs.Members
        const admin = yield* team
        yield* memberOf(admin, "team", "bob", "member")
        const error = yield* Effect.flip(members.setRole(admin, "team", admin.userId, "member"))
        assert.strictEqual(error._tag, "LastAdmin")
        const listed = yield* members.list(admin, "team")
        assert.strictEqual(listed.find((m) => m.userId === admin.userId)?.role, "admin")
        assert.deepStrictEqual(yield* auditOf("team", "member.role"), [])
      })
    )
  )

  it.effect("an admin may demote themselves while another admin remains", () =>
    withCore()(
      Effect.gen(function* () {
        const members = yield* Orgs.Members
        const admin = yield* team
        yield* memberOf(admin, "team", "bob", "admin")
        const demoted = yield* members.setRole(admin, "team", admin.userId, "viewer")
        assert.strictEqual(demoted.role, "viewer")
        assert.strictEqual(
          (yield* Effect.flip(members.setRole(admin, "team", admin.userId, "admin")))._tag,
          "Forbidden"
        )
      })
    )
  )

  it.effect("role change needs admin (member is 403, outsider 404) and a member to change (else 404)", () =>
    withCore()(
      Effect.gen(function* () {
        const members = yield* Orgs.Members
        const admin = yield* team
        const { actor: member } = yield* memberOf(admin, "team", "bob", "member")
        const { actor: outsider } = yield* signIn("eve")
        assert.strictEqual(
          (yield* Effect.flip(members.setRole(member, "team", member.userId, "admin")))._tag,
          "Forbidden"
        )
        assert.strictEqual(
          (yield* Effect.flip(members.setRole(outsider, "team", member.userId, "admin")))._tag,
          "NotFound"
        )
        assert.strictEqual(
          (yield* Effect.flip(members.setRole(admin, "team", outsider.userId, "admin")))._tag,
          "NotFound"
        )
      })
    )
  )

  it.effect("removing another member needs admin: 204 and audit member.remove; a member is 403", () =>
    withCore()(
      Effect.gen(function* () {
        const members = yield* Orgs.Members
        const admin = yield* team
        const { actor: bob } = yield* memberOf(admin, "team", "bob", "member")
        const { actor: carol } = yield* memberOf(admin, "team", "carol", "viewer")
        assert.strictEqual((yield* Effect.flip(members.remove(bob, "team", carol.userId)))._tag, "Forbidden")
        yield* members.remove(admin, "team", carol.userId)
        assert.isFalse((yield* members.list(admin, "team")).some((m) => m.userId === carol.userId))
        const audit = yield* auditOf("team", "member.remove")
        assert.deepStrictEqual(
          audit.map((e) => [e.actorId, e.target]),
          [[admin.userId, carol.userId]]
        )
        assert.strictEqual((yield* Effect.flip(members.list(carol, "team")))._tag, "NotFound")
      })
    )
  )

  it.effect("removing yourself (leaving) needs only membership: a viewer may leave, audit member.leave", () =>
    withCore()(
      Effect.gen(function* () {
        const members = yield* Orgs.Members
        const admin = yield* team
        const { actor: viewer } = yield* memberOf(admin, "team", "vic", "viewer")
        yield* members.remove(viewer, "team", viewer.userId)
        assert.isFalse((yield* (yield* Orgs.Orgs).list(viewer)).some((m) => m.slug === "team"))
        const audit = yield* auditOf("team", "member.leave")
        assert.deepStrictEqual(
          audit.map((e) => [e.actorId, e.target]),
          [[viewer.userId, viewer.userId]]
        )
        assert.deepStrictEqual(yield* auditOf("team", "member.remove"), [])
      })
    )
  )

  it.effect("the last admin cannot leave: 409 last_admin; with a second admin they can", () =>
    withCore()(
      Effect.gen(function* () {
        const members = yield* Orgs.Members
        const admin = yield* team
        const { actor: bob } = yield* memberOf(admin, "team", "bob", "member")
        assert.strictEqual((yield* Effect.flip(members.remove(admin, "team", admin.userId)))._tag, "LastAdmin")
        yield* members.setRole(admin, "team", bob.userId, "admin")
        yield* members.remove(admin, "team", admin.userId)
        assert.deepStrictEqual(
          (yield* members.list(bob, "team")).map((m) => [m.subject, m.role]),
          [["bob", "admin"]]
        )
        assert.strictEqual((yield* Effect.flip(members.remove(bob, "team", bob.userId)))._tag, "LastAdmin")
      })
    )
  )

  it.effect("removing a non-member is 404; an outsider removing anyone is 404", () =>
    withCore()(
      Effect.gen(function* () {
        const members = yield* Orgs.Members
        const admin = yield* team
        const { actor: outsider } = yield* signIn("eve")
        assert.strictEqual((yield* Effect.flip(members.remove(admin, "team", outsider.userId)))._tag, "NotFound")
        assert.strictEqual((yield* Effect.flip(members.remove(outsider, "team", admin.userId)))._tag, "NotFound")
        assert.strictEqual((yield* Effect.flip(members.remove(outsider, "team", outsider.userId)))._tag, "NotFound")
      })
    )
  )
})
