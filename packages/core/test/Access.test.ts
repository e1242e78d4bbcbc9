import { assert, describe, it } from "@effect/vitest"
import { Access, Orgs, Projects } from "@hostplane/core"
import { Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import { signIn, withCore } from "./support/CoreMemory.ts"

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

/** The code lifetime (a controlled clock) and the role rule as a unit; the rest is tested through HTTP. */
describe("Access policy (spec 4.11) on the memory store", () => {
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

  it("admitsRole: mode org admits members and admins, password and public admit by their own check", () => {
    assert.isFalse(Access.admitsRole("org", "viewer"))
    assert.isTrue(Access.admitsRole("org", "member"))
    assert.isFalse(Access.admitsRole("password", "admin"))
    assert.isTrue(Access.admitsRole("public", "viewer"))
  })
})
