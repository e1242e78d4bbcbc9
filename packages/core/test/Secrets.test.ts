import { assert, describe, it } from "@effect/vitest"
import { Orgs, Projects, Secrets } from "@hostplane/core"
import { Effect, Redacted } from "effect"
import { signIn, withCore } from "./support/CoreMemory.ts"

/** An org `team` administered by alice, with the project `web`. */
const team = Effect.gen(function* () {
  const { actor: admin } = yield* signIn("alice")
  yield* (yield* Orgs.Orgs).create(admin, { name: "Team", slug: "team" })
  const project = yield* (yield* Projects.Projects).create(admin, "team", "web")
  return { admin, project }
})

const value = (text: string) => Redacted.make(text)

/** What HTTP cannot show; every other secret rule is tested through HTTP (http/test/secrets.test.ts). */
describe("Secrets (spec 4.5) on the memory store", () => {
  it.effect("a sealed value opens only as the secret it was sealed for (project id and name are bound)", () =>
    withCore()(
      Effect.gen(function* () {
        const secrets = yield* Secrets.Secrets
        const { admin, project } = yield* team
        yield* secrets.put(admin, "team", "web", "A", value("alpha"))
        const [row] = yield* (yield* Secrets.SecretStore).listSealed(project.id)
        const sealer = yield* Secrets.Sealer
        const moved = yield* Effect.flip(sealer.open(row!.sealed, Secrets.secretContext(project.id, "B")))
        assert.strictEqual(moved.reason, "authentication_failed")
      })
    )
  )
})
