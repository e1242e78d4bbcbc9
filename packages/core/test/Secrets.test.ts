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

describe("Secrets (spec 4.5) on the memory store", () => {
  it.effect("put seals the value under the active key; open answers it; versions count 1, 2, ...", () =>
    withCore()(
      Effect.gen(function* () {
        const secrets = yield* Secrets.Secrets
        const { admin, project } = yield* team
        const first = yield* secrets.put(admin, "team", "web", "API_KEY", value("s3cr3t-one"))
        assert.deepStrictEqual(first, { name: "API_KEY", version: 1, updatedAt: "2030-01-01T00:00:00.000Z" })
        assert.strictEqual((yield* secrets.put(admin, "team", "web", "API_KEY", value("s3cr3t-two"))).version, 2)
        const stored = yield* (yield* Secrets.SecretStore).listSealed(project.id)
        assert.strictEqual(stored[0]?.sealed.keyId, (yield* Secrets.Sealer).activeKeyId)
        assert.notInclude(stored[0]?.sealed.ciphertext ?? "", "s3cr3t")
        const opened = yield* secrets.open(project.id)
        assert.deepStrictEqual(
          opened.map((secret) => [secret.name, secret.version, Redacted.value(secret.value)]),
          [["API_KEY", 2, "s3cr3t-two"]]
        )
        assert.notInclude(String(opened[0]?.value), "s3cr3t")
      })
    )
  )

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

  it.effect("bad names are 400 bad_request; DB, ASSETS and SERVICE_* in any case are 400 reserved_name", () =>
    withCore()(
      Effect.gen(function* () {
        const secrets = yield* Secrets.Secrets
        const { admin } = yield* team
        for (const name of ["", "1ABC", "A-B", "A B", "Ä", `A${"B".repeat(128)}`]) {
          const error = yield* Effect.flip(secrets.put(admin, "team", "web", name, value("v")))
          assert.strictEqual(error._tag, "BadRequest", name)
        }
        for (const name of ["DB", "ASSETS", "SERVICE_", "SERVICE_TOKEN", "db", "Assets", "service_token"]) {
          const error = yield* Effect.flip(secrets.put(admin, "team", "web", name, value("v")))
          assert.strictEqual(error._tag, "ReservedName", name)
        }
        for (const name of ["_", "DBX", "MY_DB", "ASSETS_URL", "SERVICEX", `A${"B".repeat(127)}`]) {
          assert.strictEqual((yield* secrets.put(admin, "team", "web", name, value("v"))).version, 1, name)
        }
      })
    )
  )
})
