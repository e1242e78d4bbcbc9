import { assert, describe, it } from "@effect/vitest"
import { Access, Kernel, Orgs, Projects } from "@hostplane/core"
import { Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import { auditOf, memberOf, orgIdOf, signIn, withCore } from "./support/CoreMemory.ts"

/** An org `team` administered by alice, with the project `web` served at `web.apps.localhost`. */
const team = Effect.gen(function* () {
  const { actor: admin } = yield* signIn("alice")
  yield* (yield* Orgs.Orgs).create(admin, { name: "Team", slug: "team" })
  const project = yield* (yield* Projects.Projects).create(admin, "team", "web")
  return { admin, project }
})

/** The code and next path of a callback URL from `authorize`. */
const callback = (url: string) => {
  const parsed = new URL(url)
  return {
    host: parsed.host,
    path: parsed.pathname,
    code: parsed.searchParams.get("code") ?? "",
    next: parsed.searchParams.get("next")
  }
}

describe("Access policy (spec 4.11) on the memory store", () => {
  it.effect("a project without a policy is public; set stores the mode, keeps the password when omitted", () =>
    withCore()(
      Effect.gen(function* () {
        const access = yield* Access.AccessPolicies
        const { admin, project } = yield* team
        assert.deepStrictEqual(yield* access.get(admin, "team", "web"), Access.defaultAccessPolicy)
        assert.deepStrictEqual(yield* access.policyOf(project.id), Access.defaultAccessPolicy)
        const error = yield* Effect.flip(access.set(admin, "team", "web", { mode: "password" }))
        assert.strictEqual(error._tag, "BadRequest")
        assert.deepStrictEqual(
          yield* access.set(admin, "team", "web", { mode: "password", password: "correct horse" }),
          {
            mode: "password",
            hasPassword: true,
            hasBypass: false
          }
        )
        assert.deepStrictEqual(yield* access.set(admin, "team", "web", { mode: "org" }), {
          mode: "org",
          hasPassword: true,
          hasBypass: false
        })
        assert.deepStrictEqual(yield* access.set(admin, "team", "web", { mode: "password" }), {
          mode: "password",
          hasPassword: true,
          hasBypass: false
        })
        assert.isTrue(yield* access.checkPassword(project.id, "correct horse"))
        const audit = yield* auditOf("team", "access.set")
        assert.deepStrictEqual(
          audit.map((event) => event.data),
          [
            { mode: "password", passwordChanged: true },
            { mode: "org", passwordChanged: false },
            { mode: "password", passwordChanged: false }
          ]
        )
        assert.notInclude(JSON.stringify(yield* (yield* Kernel.AuditLog).list({})), "correct horse")
      })
    )
  )

  it.effect("checkPassword: true only in mode password for the right password", () =>
    withCore()(
      Effect.gen(function* () {
        const access = yield* Access.AccessPolicies
        const { admin, project } = yield* team
        assert.isFalse(yield* access.checkPassword(project.id, "whatever1"))
        yield* access.set(admin, "team", "web", { mode: "password", password: "open sesame" })
        assert.isTrue(yield* access.checkPassword(project.id, "open sesame"))
        assert.isFalse(yield* access.checkPassword(project.id, "open sesame "))
        assert.isFalse(yield* access.checkPassword(project.id, "short"))
        const row = Option.getOrThrow(yield* (yield* Access.AccessStore).findPolicy(project.id))
        assert.match(row.passwordHash ?? "", /^\$scrypt\$/)
        yield* access.set(admin, "team", "web", { mode: "org" })
        assert.isFalse(yield* access.checkPassword(project.id, "open sesame"))
      })
    )
  )

  it.effect("each new bypass invalidates the previous one; only its SHA-256 is stored; revoke clears it", () =>
    withCore()(
      Effect.gen(function* () {
        const access = yield* Access.AccessPolicies
        const tokens = yield* Kernel.Tokens
        const { admin, project } = yield* team
        const first = yield* access.newBypass(admin, "team", "web")
        assert.isTrue(yield* access.checkBypass(project.id, first.secret))
        const second = yield* access.newBypass(admin, "team", "web")
        assert.notStrictEqual(first.secret, second.secret)
        assert.isFalse(yield* access.checkBypass(project.id, first.secret))
        assert.isTrue(yield* access.checkBypass(project.id, second.secret))
        const row = Option.getOrThrow(yield* (yield* Access.AccessStore).findPolicy(project.id))
        assert.strictEqual(row.bypassHash, yield* tokens.hash(second.secret))
        assert.deepStrictEqual(yield* access.policyOf(project.id), {
          mode: "public",
          hasPassword: false,
          hasBypass: true
        })
        yield* access.revokeBypass(admin, "team", "web")
        yield* access.revokeBypass(admin, "team", "web")
        assert.isFalse(yield* access.checkBypass(project.id, second.secret))
        assert.isFalse(yield* access.checkBypass(project.id, ""))
        assert.deepStrictEqual(
          (yield* auditOf("team")).filter((e) => e.action.startsWith("access.")).map((e) => [e.action, e.data]),
          [
            ["access.bypass.new", {}],
            ["access.bypass.new", {}],
            ["access.bypass.revoke", { revoked: true }],
            ["access.bypass.revoke", { revoked: false }]
          ]
        )
        assert.notInclude(JSON.stringify(yield* (yield* Kernel.AuditLog).list({})), second.secret)
      })
    )
  )

  it.effect(
    "authorize answers https://<to>/__service/access/callback?code=..&next=..; the code is exchanged once",
    () =>
      withCore()(
        Effect.gen(function* () {
          const access = yield* Access.AccessPolicies
          const { admin, project } = yield* team
          const { actor: viewer } = yield* memberOf(admin, "team", "vic", "viewer")
          const { url } = yield* access.authorize(viewer, { to: "WEB.apps.localhost.", next: "/docs?a=1&b=2#x" })
          const { host, path, code, next } = callback(url)
          assert.strictEqual(host, "web.apps.localhost")
          assert.strictEqual(path, Access.callbackPath)
          assert.strictEqual(next, "/docs?a=1&b=2#x")
          assert.isTrue(url.startsWith("https://web.apps.localhost/__service/access/callback?code="))
          assert.include(url, `&next=${encodeURIComponent("/docs?a=1&b=2#x")}`)
          const grant = yield* access.exchangeCode("web.apps.localhost", code)
          assert.deepStrictEqual(
            grant,
            Option.some({
              userId: viewer.userId,
              projectId: project.id,
              orgId: yield* orgIdOf("team"),
              role: "viewer" as const
            })
          )
          assert.isTrue(Option.isNone(yield* access.exchangeCode("web.apps.localhost", code)))
          assert.isFalse(Access.admitsRole("org", "viewer"))
          assert.isTrue(Access.admitsRole("org", "member"))
          assert.isFalse(Access.admitsRole("password", "admin"))
          assert.isTrue(Access.admitsRole("public", "viewer"))
        })
      )
  )

  it.effect("a code lives 60 seconds: at 59 s it is exchanged, at 60 s it is refused (TestClock)", () =>
    withCore()(
      Effect.gen(function* () {
        const access = yield* Access.AccessPolicies
        const { admin } = yield* team
        const fresh = callback((yield* access.authorize(admin, { to: "web.apps.localhost", next: "/" })).url)
        const stale = callback((yield* access.authorize(admin, { to: "web.apps.localhost", next: "/" })).url)
        yield* TestClock.adjust("59 seconds")
        assert.isTrue(Option.isSome(yield* access.exchangeCode("web.apps.localhost", fresh.code)))
        yield* TestClock.adjust("1 second")
        assert.isTrue(Option.isNone(yield* access.exchangeCode("web.apps.localhost", stale.code)))
      })
    )
  )

  it.effect("a code is bound to its host: refused at another host without being burned for its own", () =>
    withCore()(
      Effect.gen(function* () {
        const access = yield* Access.AccessPolicies
        const { admin } = yield* team
        yield* (yield* Projects.Projects).create(admin, "team", "api")
        const { code } = callback((yield* access.authorize(admin, { to: "web.apps.localhost", next: "/" })).url)
        assert.isTrue(Option.isNone(yield* access.exchangeCode("api.apps.localhost", code)))
        assert.isTrue(Option.isSome(yield* access.exchangeCode("web.apps.localhost", code)))
        assert.isTrue(Option.isNone(yield* access.exchangeCode("web.apps.localhost", code)))
        assert.isTrue(Option.isNone(yield* access.exchangeCode("web.apps.localhost", "made-up")))
        assert.isTrue(Option.isNone(yield* access.exchangeCode("web.apps.localhost", "")))
      })
    )
  )

  it.effect("a code of a user who left the org before the exchange is refused", () =>
    withCore()(
      Effect.gen(function* () {
        const access = yield* Access.AccessPolicies
        const { admin } = yield* team
        const { actor: member } = yield* memberOf(admin, "team", "mia", "member")
        const { code } = callback((yield* access.authorize(member, { to: "web.apps.localhost", next: "/" })).url)
        yield* (yield* Orgs.Members).remove(admin, "team", member.userId)
        assert.isTrue(Option.isNone(yield* access.exchangeCode("web.apps.localhost", code)))
      })
    )
  )
})
