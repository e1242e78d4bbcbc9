import { assert, layer } from "@effect/vitest"
import { Identity, Kernel, Mail, Orgs } from "@hostplane/core"
import { Deferred, Effect, Fiber, type Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import {
  at,
  day,
  makeInvite,
  makeMessage,
  makeNotification,
  makeOrg,
  makeUser,
  minute,
  randomSuffix,
  uniqueId
} from "../contract/Fixtures.ts"

/** What the org contract needs beside `OrgStore`: members join users, `sentAt` joins the outbox, audit survives. */
export type OrgStoreSuiteServices =
  Orgs.OrgStore | Identity.UserStore | Mail.MailOutbox | Kernel.AuditLog | Kernel.Transactor

const givenUser = Effect.fnUntraced(function* (overrides: Partial<Identity.User> = {}) {
  const user = makeUser(overrides)
  yield* (yield* Identity.UserStore).insert(user, at(0))
  return user
})

const givenOrg = Effect.fnUntraced(function* (overrides: Partial<Orgs.OrgRow> = {}) {
  const org = makeOrg(overrides)
  yield* (yield* Orgs.OrgStore).insert(org)
  return org
})

const byUserId = (a: { readonly userId: string }, b: { readonly userId: string }) =>
  a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0

/** The `OrgStore` contract: every adapter must pass it; ids and slugs are unique per test so a database may be shared. */
export const orgStoreSuite = <E>(name: string, store: Layer.Layer<OrgStoreSuiteServices, E>): void =>
  layer(store)(`${name}: OrgStore contract`, (it) => {
    it.effect("an inserted org is found by slug and by id", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg({ plan: "pro", personal: true, name: "Acme Ltd" })
        assert.deepStrictEqual(yield* orgs.findBySlug(org.slug), Option.some(org))
        assert.deepStrictEqual(yield* orgs.findById(org.id), Option.some(org))
      })
    )

    it.effect("unknown slugs and ids are none", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        assert.isTrue(Option.isNone(yield* orgs.findBySlug(`t-${randomSuffix()}`)))
        assert.isTrue(Option.isNone(yield* orgs.findById(uniqueId("org"))))
      })
    )

    it.effect("inserting a taken slug fails with SlugTaken and leaves the first org as it was", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const first = yield* givenOrg()
        const clash = makeOrg({ slug: first.slug, name: "Clash" })
        const error = yield* Effect.flip(orgs.insert(clash))
        assert.strictEqual(error._tag, "SlugTaken")
        assert.deepStrictEqual(yield* orgs.findBySlug(first.slug), Option.some(first))
        assert.isTrue(Option.isNone(yield* orgs.findById(clash.id)))
      })
    )

    it.effect("rename changes the display name only and returns the row", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        const renamed = yield* orgs.rename(org.id, "New Name")
        assert.deepStrictEqual(renamed, { ...org, name: "New Name" })
        assert.deepStrictEqual(yield* orgs.findBySlug(org.slug), Option.some(renamed))
      })
    )

    it.effect("setPlan changes the plan only", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        yield* orgs.setPlan(org.id, "pro")
        assert.deepStrictEqual(yield* orgs.findById(org.id), Option.some({ ...org, plan: "pro" as const }))
        yield* orgs.setPlan(org.id, "free")
        assert.deepStrictEqual(yield* orgs.findById(org.id), Option.some(org))
      })
    )

    it.effect("addMember adds the user with the role; findMembership answers it", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        const user = yield* givenUser()
        assert.isTrue(Option.isNone(yield* orgs.findMembership(org.id, user.id)))
        assert.isTrue(yield* orgs.addMember(org.id, user.id, "member", at(minute)))
        assert.deepStrictEqual(yield* orgs.findMembership(org.id, user.id), Option.some("member" as const))
      })
    )

    it.effect("addMember returns false when the user already is a member and keeps the role", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        const user = yield* givenUser()
        assert.isTrue(yield* orgs.addMember(org.id, user.id, "viewer", at(0)))
        assert.isFalse(yield* orgs.addMember(org.id, user.id, "admin", at(minute)))
        assert.deepStrictEqual(yield* orgs.findMembership(org.id, user.id), Option.some("viewer" as const))
        const members = yield* orgs.listMembers(org.id)
        assert.strictEqual(members.length, 1)
        assert.strictEqual(members[0]?.joinedAt, at(0))
      })
    )

    it.effect("listMembers joins each member's identity and profile", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        const alice = yield* givenUser()
        const bob = yield* givenUser({ email: null, name: null })
        yield* orgs.addMember(org.id, alice.id, "admin", at(0))
        yield* orgs.addMember(org.id, bob.id, "viewer", at(minute))
        const members = [...(yield* orgs.listMembers(org.id))].sort(byUserId)
        const expected: Array<Orgs.Member> = [
          {
            userId: alice.id,
            provider: alice.provider,
            subject: alice.subject,
            email: alice.email,
            name: alice.name,
            role: "admin",
            joinedAt: at(0)
          },
          {
            userId: bob.id,
            provider: bob.provider,
            subject: bob.subject,
            email: null,
            name: null,
            role: "viewer",
            joinedAt: at(minute)
          }
        ]
        assert.deepStrictEqual(members, expected.sort(byUserId))
      })
    )

    it.effect("listMembers of an org without members is empty", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        assert.deepStrictEqual(yield* orgs.listMembers(org.id), [])
      })
    )

    it.effect("membershipsOf lists the user's orgs with the role in each", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const user = yield* givenUser()
        const first = yield* givenOrg()
        const second = yield* givenOrg({ plan: "pro" })
        yield* givenOrg()
        yield* orgs.addMember(first.id, user.id, "admin", at(0))
        yield* orgs.addMember(second.id, user.id, "viewer", at(minute))
        const memberships = [...(yield* orgs.membershipsOf(user.id))].sort((a, b) => (a.org.id < b.org.id ? -1 : 1))
        const expected: Array<Orgs.MembershipRow> = [
          { org: first, role: "admin" },
          { org: second, role: "viewer" }
        ]
        assert.deepStrictEqual(
          memberships,
          expected.sort((a, b) => (a.org.id < b.org.id ? -1 : 1))
        )
        assert.deepStrictEqual(yield* orgs.membershipsOf(uniqueId("usr")), [])
      })
    )

    it.effect("setRole changes the member's role", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        const user = yield* givenUser()
        yield* orgs.addMember(org.id, user.id, "viewer", at(0))
        yield* orgs.setRole(org.id, user.id, "admin")
        assert.deepStrictEqual(yield* orgs.findMembership(org.id, user.id), Option.some("admin" as const))
        assert.strictEqual((yield* orgs.listMembers(org.id))[0]?.role, "admin")
      })
    )

    it.effect("countAdmins counts the admins of that org only", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        const other = yield* givenOrg()
        const [a, b, c] = [yield* givenUser(), yield* givenUser(), yield* givenUser()]
        assert.strictEqual(yield* orgs.countAdmins(org.id), 0)
        yield* orgs.addMember(org.id, a.id, "admin", at(0))
        yield* orgs.addMember(org.id, b.id, "admin", at(0))
        yield* orgs.addMember(org.id, c.id, "member", at(0))
        yield* orgs.addMember(other.id, c.id, "admin", at(0))
        assert.strictEqual(yield* orgs.countAdmins(org.id), 2)
        yield* orgs.setRole(org.id, b.id, "viewer")
        assert.strictEqual(yield* orgs.countAdmins(org.id), 1)
      })
    )

    it.effect("removeMember removes that membership only", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        const other = yield* givenOrg()
        const user = yield* givenUser()
        yield* orgs.addMember(org.id, user.id, "admin", at(0))
        yield* orgs.addMember(other.id, user.id, "member", at(0))
        yield* orgs.removeMember(org.id, user.id)
        assert.isTrue(Option.isNone(yield* orgs.findMembership(org.id, user.id)))
        assert.deepStrictEqual(yield* orgs.listMembers(org.id), [])
        assert.deepStrictEqual(yield* orgs.findMembership(other.id, user.id), Option.some("member" as const))
        assert.isTrue(yield* orgs.addMember(org.id, user.id, "viewer", at(minute)))
      })
    )

    it.effect("an inserted invite is found by id, by token hash and as the open invite of its address", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        const invite = makeInvite(org.id, { role: "admin" })
        yield* orgs.insertInvite(invite)
        const row: Orgs.InviteRow = { ...invite, sentAt: null }
        assert.deepStrictEqual(yield* orgs.findInvite(org.id, invite.id), Option.some(row))
        assert.deepStrictEqual(yield* orgs.findInviteByToken(invite.tokenHash), Option.some(row))
        assert.deepStrictEqual(yield* orgs.findOpenInvite(org.id, invite.email), Option.some(row))
        assert.deepStrictEqual(yield* orgs.listOpenInvites(org.id), [row])
      })
    )

    it.effect("an invite is not found through another org", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        const other = yield* givenOrg()
        const invite = makeInvite(org.id)
        yield* orgs.insertInvite(invite)
        assert.isTrue(Option.isNone(yield* orgs.findInvite(other.id, invite.id)))
        assert.isTrue(Option.isNone(yield* orgs.findOpenInvite(other.id, invite.email)))
        assert.deepStrictEqual(yield* orgs.listOpenInvites(other.id), [])
        assert.isTrue(Option.isNone(yield* orgs.findInviteByToken(`hash-${randomSuffix()}`)))
      })
    )

    it.effect("updateInvite replaces role, token hash, expiry and mail of the same row", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const outbox = yield* Mail.MailOutbox
        const org = yield* givenOrg()
        const firstMail = makeMessage()
        const secondMail = makeMessage()
        yield* outbox.enqueue(firstMail, at(0))
        yield* outbox.enqueue(secondMail, at(minute))
        const invite = makeInvite(org.id, { mailId: firstMail.id })
        yield* orgs.insertInvite(invite)
        const renewed = {
          ...invite,
          role: "viewer" as const,
          tokenHash: `hash-${randomSuffix()}`,
          expiresAt: at(8 * day),
          mailId: secondMail.id
        }
        yield* orgs.updateInvite(renewed)
        const row: Orgs.InviteRow = { ...renewed, sentAt: null }
        assert.deepStrictEqual(yield* orgs.findInvite(org.id, invite.id), Option.some(row))
        assert.isTrue(Option.isNone(yield* orgs.findInviteByToken(invite.tokenHash)))
        assert.deepStrictEqual(yield* orgs.findInviteByToken(renewed.tokenHash), Option.some(row))
        assert.deepStrictEqual(yield* orgs.listOpenInvites(org.id), [row])
      })
    )

    it.effect("setInviteState closes the invite: it is no longer open but still found", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        const accepted = makeInvite(org.id)
        const revoked = makeInvite(org.id)
        yield* orgs.insertInvite(accepted)
        yield* orgs.insertInvite(revoked)
        yield* orgs.setInviteState(accepted.id, "accepted")
        yield* orgs.setInviteState(revoked.id, "revoked")
        assert.deepStrictEqual(yield* orgs.listOpenInvites(org.id), [])
        assert.isTrue(Option.isNone(yield* orgs.findOpenInvite(org.id, accepted.email)))
        assert.isTrue(Option.isNone(yield* orgs.findOpenInvite(org.id, revoked.email)))
        assert.deepStrictEqual(
          yield* orgs.findInvite(org.id, accepted.id),
          Option.some({ ...accepted, state: "accepted" as const, sentAt: null })
        )
        assert.deepStrictEqual(
          yield* orgs.findInviteByToken(revoked.tokenHash),
          Option.some({ ...revoked, state: "revoked" as const, sentAt: null })
        )
      })
    )

    it.effect("a new invite for an address whose invite was closed is the open one", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        const old = makeInvite(org.id)
        yield* orgs.insertInvite(old)
        yield* orgs.setInviteState(old.id, "revoked")
        const fresh = makeInvite(org.id, { email: old.email, createdAt: at(minute) })
        yield* orgs.insertInvite(fresh)
        assert.deepStrictEqual(yield* orgs.findOpenInvite(org.id, old.email), Option.some({ ...fresh, sentAt: null }))
      })
    )

    it.effect("listOpenInvites lists stored pending invites newest first, past their expiry included", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        const oldest = makeInvite(org.id, { createdAt: at(0), expiresAt: at(minute) })
        const middle = makeInvite(org.id, { createdAt: at(2 * minute) })
        const newest = makeInvite(org.id, { createdAt: at(3 * minute) })
        const closed = makeInvite(org.id, { createdAt: at(4 * minute) })
        yield* orgs.insertInvite(middle)
        yield* orgs.insertInvite(newest)
        yield* orgs.insertInvite(oldest)
        yield* orgs.insertInvite(closed)
        yield* orgs.setInviteState(closed.id, "accepted")
        const listed = yield* orgs.listOpenInvites(org.id)
        assert.deepStrictEqual(
          listed.map((invite) => invite.id),
          [newest.id, middle.id, oldest.id]
        )
      })
    )

    it.effect("an invite's sentAt is its outbox row's sentAt once that row is sent, null before", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const outbox = yield* Mail.MailOutbox
        const org = yield* givenOrg()
        const mail = makeMessage()
        yield* outbox.enqueue(mail, at(0))
        const invite = makeInvite(org.id, { mailId: mail.id })
        yield* orgs.insertInvite(invite)
        assert.strictEqual(Option.getOrThrow(yield* orgs.findInvite(org.id, invite.id)).sentAt, null)
        yield* outbox.recordFailure(mail.id, "temporary")
        assert.strictEqual(Option.getOrThrow(yield* orgs.findInviteByToken(invite.tokenHash)).sentAt, null)
        yield* outbox.markSent(mail.id, at(2 * minute))
        assert.strictEqual(Option.getOrThrow(yield* orgs.findInvite(org.id, invite.id)).sentAt, at(2 * minute))
        assert.strictEqual(Option.getOrThrow(yield* orgs.findInviteByToken(invite.tokenHash)).sentAt, at(2 * minute))
        assert.strictEqual(Option.getOrThrow(yield* orgs.findOpenInvite(org.id, invite.email)).sentAt, at(2 * minute))
        assert.strictEqual((yield* orgs.listOpenInvites(org.id))[0]?.sentAt, at(2 * minute))
      })
    )

    it.effect("a renewed invite's sentAt follows its new outbox row", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const outbox = yield* Mail.MailOutbox
        const org = yield* givenOrg()
        const first = makeMessage()
        const second = makeMessage()
        yield* outbox.enqueue(first, at(0))
        yield* outbox.markSent(first.id, at(minute))
        const invite = makeInvite(org.id, { mailId: first.id })
        yield* orgs.insertInvite(invite)
        assert.strictEqual(Option.getOrThrow(yield* orgs.findInvite(org.id, invite.id)).sentAt, at(minute))
        yield* outbox.enqueue(second, at(2 * minute))
        yield* orgs.updateInvite({ ...invite, mailId: second.id })
        assert.strictEqual(Option.getOrThrow(yield* orgs.findInvite(org.id, invite.id)).sentAt, null)
      })
    )

    it.effect("insertNotification records an id once: a second insert of it answers false and changes nothing", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        const first = makeNotification(org.id, { createdAt: at(0), kind: "restore", projectName: "web" })
        assert.isTrue(yield* orgs.insertNotification(first))
        assert.isFalse(yield* orgs.insertNotification({ ...first, message: "a second telling", createdAt: at(minute) }))
        const listed = yield* orgs.listNotifications(org.id, 50)
        assert.deepStrictEqual(
          listed.map((n) => [n.id, n.message]),
          [[first.id, first.message]]
        )
      })
    )

    it.effect("listNotifications lists the org's notifications newest first, at most limit", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        const other = yield* givenOrg()
        const a = makeNotification(org.id, { createdAt: at(0), kind: "backup", projectName: "web" })
        const b = makeNotification(org.id, { createdAt: at(2 * minute), kind: "restore" })
        const c = makeNotification(org.id, { createdAt: at(minute), kind: "limit", projectName: "api" })
        yield* orgs.insertNotification(a)
        yield* orgs.insertNotification(b)
        yield* orgs.insertNotification(c)
        yield* orgs.insertNotification(makeNotification(other.id, { createdAt: at(3 * minute) }))
        const view = (row: Orgs.NotificationRow): Orgs.Notification => ({
          id: row.id,
          kind: row.kind,
          message: row.message,
          projectName: row.projectName,
          createdAt: row.createdAt,
          sentAt: null
        })
        assert.deepStrictEqual(yield* orgs.listNotifications(org.id, 50), [view(b), view(c), view(a)])
        assert.deepStrictEqual(yield* orgs.listNotifications(org.id, 2), [view(b), view(c)])
      })
    )

    it.effect("listNotifications with before: the rows after that position, ties at one instant ordered by id", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        // Ids in byte order a < b < c < d < e; a run-unique prefix, as ids are global.
        const id = (letter: string) => `ntf_${org.id.slice(4)}_${letter}`
        const rows = [
          makeNotification(org.id, { id: id("a"), createdAt: at(minute) }),
          makeNotification(org.id, { id: id("b"), createdAt: at(minute) }),
          makeNotification(org.id, { id: id("c"), createdAt: at(minute) }),
          makeNotification(org.id, { id: id("d"), createdAt: at(0) }),
          makeNotification(org.id, { id: id("e"), createdAt: at(2 * minute) })
        ]
        for (const row of rows) yield* orgs.insertNotification(row)
        const ids = (listed: ReadonlyArray<Orgs.Notification>) => listed.map((row) => row.id)
        assert.deepStrictEqual(ids(yield* orgs.listNotifications(org.id, 50)), [
          id("e"),
          id("c"),
          id("b"),
          id("a"),
          id("d")
        ])
        const after = (position: string, createdAt: string, limit = 50) =>
          Effect.map(orgs.listNotifications(org.id, limit, { createdAt, id: position }), ids)
        assert.deepStrictEqual(yield* after(id("e"), at(2 * minute)), [id("c"), id("b"), id("a"), id("d")])
        assert.deepStrictEqual(yield* after(id("c"), at(minute), 2), [id("b"), id("a")])
        assert.deepStrictEqual(yield* after(id("b"), at(minute)), [id("a"), id("d")])
        assert.deepStrictEqual(yield* after(id("d"), at(0)), [])
        // A position between rows (a row since gone) still pages on from there.
        assert.deepStrictEqual(yield* after(id("bb"), at(minute)), [id("b"), id("a"), id("d")])
      })
    )

    it.effect("a notification's sentAt is its outbox row's sentAt once that row is sent", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const outbox = yield* Mail.MailOutbox
        const org = yield* givenOrg()
        const mail = makeMessage()
        yield* outbox.enqueue(mail, at(0))
        const queued = makeNotification(org.id, { mailId: mail.id, createdAt: at(minute) })
        const unsent = makeNotification(org.id, { mailId: null, createdAt: at(0) })
        yield* orgs.insertNotification(queued)
        yield* orgs.insertNotification(unsent)
        assert.deepStrictEqual(
          (yield* orgs.listNotifications(org.id, 10)).map((n) => n.sentAt),
          [null, null]
        )
        yield* outbox.markSent(mail.id, at(5 * minute))
        assert.deepStrictEqual(
          (yield* orgs.listNotifications(org.id, 10)).map((n) => [n.id, n.sentAt]),
          [
            [queued.id, at(5 * minute)],
            [unsent.id, null]
          ]
        )
      })
    )

    it.effect("remove drops the org with its memberships, invites and notifications, but never audit rows", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const audit = yield* Kernel.AuditLog
        const org = yield* givenOrg()
        const other = yield* givenOrg()
        const user = yield* givenUser()
        yield* orgs.addMember(org.id, user.id, "admin", at(0))
        yield* orgs.addMember(other.id, user.id, "admin", at(0))
        const invite = makeInvite(org.id)
        const keptInvite = makeInvite(other.id)
        yield* orgs.insertInvite(invite)
        yield* orgs.insertInvite(keptInvite)
        yield* orgs.insertNotification(makeNotification(org.id))
        yield* orgs.insertNotification(makeNotification(other.id))
        const event: Kernel.AuditEvent = {
          action: "org.delete",
          orgId: org.id,
          actorId: user.id,
          target: org.slug,
          data: {},
          at: at(minute)
        }
        yield* audit.record(event)
        yield* orgs.remove(org.id)

        assert.isTrue(Option.isNone(yield* orgs.findById(org.id)))
        assert.isTrue(Option.isNone(yield* orgs.findBySlug(org.slug)))
        assert.isTrue(Option.isNone(yield* orgs.findMembership(org.id, user.id)))
        assert.deepStrictEqual(yield* orgs.listMembers(org.id), [])
        assert.deepStrictEqual(yield* orgs.membershipsOf(user.id), [{ org: other, role: "admin" }])
        assert.isTrue(Option.isNone(yield* orgs.findInvite(org.id, invite.id)))
        assert.isTrue(Option.isNone(yield* orgs.findInviteByToken(invite.tokenHash)))
        assert.deepStrictEqual(yield* orgs.listOpenInvites(org.id), [])
        assert.deepStrictEqual(yield* orgs.listNotifications(org.id, 50), [])
        assert.deepStrictEqual(yield* audit.list({ orgId: org.id }), [event])

        assert.deepStrictEqual(yield* orgs.findById(other.id), Option.some(other))
        assert.strictEqual((yield* orgs.listOpenInvites(other.id)).length, 1)
        assert.strictEqual((yield* orgs.listNotifications(other.id, 50)).length, 1)
        assert.strictEqual(yield* orgs.countAdmins(other.id), 1)
      })
    )

    it.effect("a removed org's slug can be taken again", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        yield* orgs.remove(org.id)
        const again = yield* givenOrg({ slug: org.slug })
        assert.deepStrictEqual(yield* orgs.findBySlug(org.slug), Option.some(again))
      })
    )

    it.effect("lock serialises writers of one org until the surrounding transaction ends", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const tx = yield* Kernel.Transactor
        const org = yield* givenOrg({ name: "n" })
        const firstLocked = yield* Deferred.make<void>()
        const appendUnderLock = (suffix: string, signal: boolean) =>
          tx.withTransaction(
            Effect.gen(function* () {
              yield* orgs.lock(org.id)
              const current = Option.getOrThrow(yield* orgs.findById(org.id))
              if (signal) yield* Deferred.succeed(firstLocked, undefined)
              // Give an unserialised second writer time to read the same name.
              yield* TestClock.withLive(Effect.sleep("50 millis"))
              yield* orgs.rename(org.id, `${current.name}${suffix}`)
            })
          )
        const first = yield* Effect.forkChild(appendUnderLock("a", true))
        yield* Deferred.await(firstLocked)
        yield* appendUnderLock("b", false)
        yield* Fiber.join(first)
        assert.strictEqual(Option.getOrThrow(yield* orgs.findById(org.id)).name, "nab")
      })
    )

    it.effect("SlugTaken inside a transaction leaves the transaction usable", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const tx = yield* Kernel.Transactor
        const first = makeOrg()
        const second = makeOrg()
        yield* tx.withTransaction(
          Effect.gen(function* () {
            yield* orgs.insert(first)
            const error = yield* Effect.flip(orgs.insert(makeOrg({ slug: first.slug })))
            assert.strictEqual(error._tag, "SlugTaken")
            yield* orgs.insert(second)
          })
        )
        assert.deepStrictEqual(yield* orgs.findById(first.id), Option.some(first))
        assert.deepStrictEqual(yield* orgs.findById(second.id), Option.some(second))
      })
    )

    it.effect("a repeated addMember inside a transaction leaves the transaction usable", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const tx = yield* Kernel.Transactor
        const org = yield* givenOrg()
        const user = yield* givenUser()
        const other = yield* givenUser()
        yield* tx.withTransaction(
          Effect.gen(function* () {
            assert.isTrue(yield* orgs.addMember(org.id, user.id, "admin", at(0)))
            assert.isFalse(yield* orgs.addMember(org.id, user.id, "viewer", at(0)))
            assert.isTrue(yield* orgs.addMember(org.id, other.id, "member", at(0)))
          })
        )
        assert.strictEqual((yield* orgs.listMembers(org.id)).length, 2)
      })
    )

    it.effect("expired invites are still open to the store: the reader tells pending from expired", () =>
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* givenOrg()
        const invite = makeInvite(org.id, { createdAt: at(-8 * day), expiresAt: at(-day) })
        yield* orgs.insertInvite(invite)
        assert.deepStrictEqual(
          yield* orgs.findOpenInvite(org.id, invite.email),
          Option.some({ ...invite, sentAt: null })
        )
      })
    )
  })
