import { assert, describe, it } from "@effect/vitest"
import { Kernel, Orgs } from "@hostplane/core"
import { Effect, Option } from "effect"
import { auditOf, memberOf, orgIdOf, signIn, withCore } from "./support/CoreMemory.ts"

describe("Orgs (spec 4.2) on the memory store", () => {
  it.effect("POST /v1/orgs: creator becomes admin of a non-personal org", () =>
    withCore()(
      Effect.gen(function* () {
        const orgs = yield* Orgs.Orgs
        const { actor } = yield* signIn("alice")
        const org = yield* orgs.create(actor, { name: "Acme Corp" })
        assert.deepStrictEqual(org, {
          slug: "acme-corp",
          name: "Acme Corp",
          plan: "free",
          personal: false,
          createdAt: "2030-01-01T00:00:00.000Z"
        })
        const listed = (yield* orgs.list(actor)).find((m) => m.slug === "acme-corp")
        assert.strictEqual(listed?.role, "admin")
        assert.strictEqual(listed?.projectLimit, 3)
      })
    )
  )

  it.effect("the slug is derived from the name when absent, with a suffix when that slug is taken", () =>
    withCore()(
      Effect.gen(function* () {
        const orgs = yield* Orgs.Orgs
        const { actor } = yield* signIn("alice")
        assert.strictEqual((yield* orgs.create(actor, { name: "  Ünïcode & Co.  " })).slug, "unicode-co")
        const again = yield* orgs.create(actor, { name: "Unicode Co" })
        assert.match(again.slug, /^unicode-co-[a-z0-9]{1,5}$/)
        assert.strictEqual((yield* orgs.create(actor, { name: "!!!" })).slug, "org")
      })
    )
  )

  it.effect("an explicit slug that is taken is 409 slug_taken", () =>
    withCore()(
      Effect.gen(function* () {
        const orgs = yield* Orgs.Orgs
        const { actor } = yield* signIn("alice")
        yield* orgs.create(actor, { name: "First", slug: "shared" })
        const error = yield* Effect.flip(orgs.create(actor, { name: "Second", slug: "shared" }))
        assert.strictEqual(error._tag, "SlugTaken")
        assert.strictEqual((yield* orgs.list(actor)).filter((m) => m.slug === "shared")[0]?.name, "First")
        assert.strictEqual((yield* orgs.list(actor)).length, 2)
      })
    )
  )

  it.effect("PATCH renames the display name, the slug stays; audit org.rename", () =>
    withCore()(
      Effect.gen(function* () {
        const orgs = yield* Orgs.Orgs
        const { actor } = yield* signIn("alice")
        yield* orgs.create(actor, { name: "Old", slug: "team" })
        const renamed = yield* orgs.rename(actor, "team", "  New Name ")
        assert.strictEqual(renamed.slug, "team")
        assert.strictEqual(renamed.name, "New Name")
        assert.strictEqual(renamed.role, "admin")
        const audit = yield* auditOf("team", "org.rename")
        assert.deepStrictEqual(
          audit.map((e) => [e.actorId, e.target, e.data]),
          [[actor.userId, "team", { name: "New Name" }]]
        )
      })
    )
  )

  it.effect("rename needs admin: a member is 403, an outsider is 404", () =>
    withCore()(
      Effect.gen(function* () {
        const orgs = yield* Orgs.Orgs
        const { actor: admin } = yield* signIn("alice")
        yield* orgs.create(admin, { name: "Team", slug: "team" })
        const { actor: member } = yield* memberOf(admin, "team", "bob", "member")
        const { actor: outsider } = yield* signIn("eve")
        assert.strictEqual((yield* Effect.flip(orgs.rename(member, "team", "X")))._tag, "Forbidden")
        assert.strictEqual((yield* Effect.flip(orgs.rename(outsider, "team", "X")))._tag, "NotFound")
        assert.strictEqual((yield* Effect.flip(orgs.rename(admin, "no-such-org", "X")))._tag, "NotFound")
      })
    )
  )

  it.effect("DELETE with confirm different from the slug is 400", () =>
    withCore()(
      Effect.gen(function* () {
        const orgs = yield* Orgs.Orgs
        const { actor } = yield* signIn("alice")
        yield* orgs.create(actor, { name: "Team", slug: "team" })
        const error = yield* Effect.flip(orgs.remove(actor, "team", "Team"))
        assert.strictEqual(error._tag, "BadRequest")
        assert.isTrue((yield* orgs.list(actor)).some((m) => m.slug === "team"))
      })
    )
  )

  it.effect("DELETE trims whitespace around confirm, is 204, and the audit org.delete survives the org", () =>
    withCore()(
      Effect.gen(function* () {
        const orgs = yield* Orgs.Orgs
        const { actor } = yield* signIn("alice")
        yield* orgs.create(actor, { name: "Team", slug: "team" })
        const { actor: member } = yield* memberOf(actor, "team", "bob", "member")
        const orgId = yield* orgIdOf("team")
        yield* orgs.remove(actor, "team", "  team \n")
        assert.isFalse((yield* orgs.list(actor)).some((m) => m.slug === "team"))
        assert.isFalse((yield* orgs.list(member)).some((m) => m.slug === "team"))
        assert.isTrue(Option.isNone(yield* (yield* Orgs.OrgStore).findById(orgId)))
        const audit = yield* (yield* Kernel.AuditLog).list({ orgId, action: "org.delete" })
        assert.deepStrictEqual(
          audit.map((e) => [e.actorId, e.target]),
          [[actor.userId, "team"]]
        )
        assert.isTrue((yield* (yield* Kernel.AuditLog).list({ orgId })).some((e) => e.action === "member.add"))
      })
    )
  )

  it.effect("a personal org cannot be deleted: 409 personal_org", () =>
    withCore()(
      Effect.gen(function* () {
        const orgs = yield* Orgs.Orgs
        const { actor } = yield* signIn("alice")
        const error = yield* Effect.flip(orgs.remove(actor, "alice", "alice"))
        assert.strictEqual(error._tag, "PersonalOrg")
      })
    )
  )

  it.effect("an org that still holds things is 409 org_not_empty with counts and a few names in details.holdings", () =>
    withCore({
      holdings: [
        {
          kind: "projects",
          count: () => Effect.succeed({ count: 7, names: ["a", "b", "c", "d", "e", "f", "g"] })
        },
        { kind: "domains", count: () => Effect.succeed({ count: 0, names: [] }) },
        { kind: "zones", count: () => Effect.succeed({ count: 1, names: ["example.com"] }) }
      ]
    })(
      Effect.gen(function* () {
        const orgs = yield* Orgs.Orgs
        const { actor } = yield* signIn("alice")
        yield* orgs.create(actor, { name: "Team", slug: "team" })
        const error = yield* Effect.flip(orgs.remove(actor, "team", "team"))
        assert.strictEqual(error._tag, "OrgNotEmpty")
        assert.deepStrictEqual(error.details, {
          holdings: {
            projects: { count: 7, names: ["a", "b", "c", "d", "e"] },
            zones: { count: 1, names: ["example.com"] }
          }
        })
        assert.isTrue((yield* orgs.list(actor)).some((m) => m.slug === "team"))
        assert.deepStrictEqual(yield* auditOf("team", "org.delete"), [])
      })
    )
  )

  it.effect("the holdings counters are asked about the org being deleted", () => {
    const asked: Array<string> = []
    return withCore({
      holdings: [
        { kind: "projects", count: (orgId) => Effect.sync(() => (asked.push(orgId), { count: 0, names: [] })) }
      ]
    })(
      Effect.gen(function* () {
        const orgs = yield* Orgs.Orgs
        const { actor } = yield* signIn("alice")
        yield* orgs.create(actor, { name: "Team", slug: "team" })
        const orgId = yield* orgIdOf("team")
        yield* orgs.remove(actor, "team", "team")
        assert.deepStrictEqual(asked, [orgId])
      })
    )
  })

  it.effect("an org with a live paid subscription is 409 active_subscription", () =>
    withCore({ hasSubscription: () => Effect.succeed(true) })(
      Effect.gen(function* () {
        const orgs = yield* Orgs.Orgs
        const { actor } = yield* signIn("alice")
        yield* orgs.create(actor, { name: "Team", slug: "team" })
        const error = yield* Effect.flip(orgs.remove(actor, "team", "team"))
        assert.strictEqual(error._tag, "ActiveSubscription")
        assert.isTrue((yield* orgs.list(actor)).some((m) => m.slug === "team"))
      })
    )
  )

  it.effect("delete needs admin: a member is 403, an outsider is 404", () =>
    withCore()(
      Effect.gen(function* () {
        const orgs = yield* Orgs.Orgs
        const { actor: admin } = yield* signIn("alice")
        yield* orgs.create(admin, { name: "Team", slug: "team" })
        const { actor: member } = yield* memberOf(admin, "team", "bob", "member")
        const { actor: outsider } = yield* signIn("eve")
        assert.strictEqual((yield* Effect.flip(orgs.remove(member, "team", "team")))._tag, "Forbidden")
        assert.strictEqual((yield* Effect.flip(orgs.remove(outsider, "team", "team")))._tag, "NotFound")
      })
    )
  )
})
