import { assert, describe, it } from "@effect/vitest"
import { Kernel, Orgs } from "@hostplane/core"
import { Effect, Option } from "effect"
import { auditOf, memberOf, orgIdOf, signIn, withCore } from "./support/CoreMemory.ts"

describe("Orgs (spec 4.2) on the memory store", () => {
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
})
