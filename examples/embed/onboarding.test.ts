import { assert, describe, it } from "@effect/vitest"
import { Errors, Orgs, Projects } from "@hostplane/core"
import { TestHostplane } from "@hostplane/testkit"
import { Clock, Effect } from "effect"
import { onboard } from "./onboarding.ts"

// A host's own tests of its code that calls hostplane: one layer, memory stores, no PostgreSQL, no HTTP.
describe("onboard, on TestHostplane", () => {
  it.effect("creates the team's org and website, audited as the user, with dates of this era", () =>
    Effect.gen(function* () {
      const ada = yield* TestHostplane.asUser("ada")
      const { org, project } = yield* onboard(ada, { name: "Ada's team", teammates: [] })
      assert.strictEqual(project, "website")
      const audit = yield* TestHostplane.auditOf({ org })
      assert.deepStrictEqual(
        audit.map((event) => [event.action, event.actorId]),
        [
          ["org.create", ada.userId],
          ["project.create", ada.userId]
        ]
      )
      assert.strictEqual(new Date(yield* Clock.currentTimeMillis).getUTCFullYear(), 2026)
      assert.isTrue(audit.every((event) => event.at.startsWith("2026-")))
    }).pipe(Effect.provide(TestHostplane.layer()))
  )

  it.effect("mails each teammate an invite once the jobs have run", () =>
    Effect.gen(function* () {
      const ada = yield* TestHostplane.asUser("ada", { email: "ada@host.test" })
      yield* onboard(ada, { name: "Mailers", teammates: ["bob@host.test", "cy@host.test"] })
      assert.deepStrictEqual(yield* TestHostplane.outbox, [])
      assert.isAtLeast(yield* TestHostplane.drainJobs(), 2)
      const sent = yield* TestHostplane.outbox
      assert.deepStrictEqual(sent.map((message) => message.to).sort(), ["bob@host.test", "cy@host.test"])
    }).pipe(Effect.provide(TestHostplane.layer()))
  )

  it.effect("hostplane's rules hold for host code too: a taken project name is refused, an outsider sees nothing", () =>
    Effect.gen(function* () {
      const { actor, org, project } = yield* TestHostplane.orgWithProject({ org: "Taken" })
      const projects = yield* Projects.Projects
      const taken = yield* Effect.flip(projects.create(actor, org.slug, project.name))
      assert.instanceOf(taken, Errors.ProjectNameTaken)
      const other = yield* TestHostplane.asUser("mallory")
      const refused = yield* Effect.flip(
        Effect.flatMap(Effect.service(Orgs.Invites), (invites) => invites.list(other, org.slug))
      )
      assert.instanceOf(refused, Errors.NotFound)
    }).pipe(Effect.provide(TestHostplane.layer()))
  )
})

describe("the same code against TestHostplane.server()", () => {
  it("host code calling the API over HTTP", async () => {
    const hostplane = await TestHostplane.server()
    try {
      const token = await hostplane.token("ada")
      const reply = await fetch(`${hostplane.url}/v1/orgs`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "Over HTTP" })
      })
      assert.strictEqual(reply.status, 201)
      const { slug } = (await reply.json()) as { slug: string }
      const audit = await hostplane.run(TestHostplane.auditOf({ org: slug }))
      assert.deepStrictEqual(
        audit.map((event) => event.action),
        ["org.create"]
      )
      const ada = hostplane.asUser({ provider: "dev", subject: "ada" })
      assert.include(
        (await ada.orgs.list()).items.map((org) => org.slug),
        slug
      )
    } finally {
      await hostplane.close()
    }
  })
})
