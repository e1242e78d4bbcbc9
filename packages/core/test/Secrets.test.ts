import { assert, describe, it } from "@effect/vitest"
import { Kernel, Orgs, Projects, Secrets } from "@hostplane/core"
import { Effect, Redacted } from "effect"
import { auditOf, memberOf, signIn, withCore } from "./support/CoreMemory.ts"

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

  it.effect("audit secret.set and secret.delete hold the name only, never the value", () =>
    withCore()(
      Effect.gen(function* () {
        const secrets = yield* Secrets.Secrets
        const { admin, project } = yield* team
        yield* secrets.put(admin, "team", "web", "DATABASE_PASSWORD", value("hunter2-very-secret"))
        yield* secrets.remove(admin, "team", "web", "DATABASE_PASSWORD")
        const audit = (yield* auditOf("team")).filter((event) => event.action.startsWith("secret."))
        assert.deepStrictEqual(
          audit.map((event) => [event.action, event.actorId, event.target, event.data]),
          [
            ["secret.set", admin.userId, project.id, { name: "DATABASE_PASSWORD" }],
            ["secret.delete", admin.userId, project.id, { name: "DATABASE_PASSWORD" }]
          ]
        )
        assert.notInclude(JSON.stringify(yield* (yield* Kernel.AuditLog).list({})), "hunter2")
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

  it.effect("a value over 64 KiB of UTF-8 or with a lone surrogate is 400; exactly 64 KiB is accepted", () =>
    withCore()(
      Effect.gen(function* () {
        const secrets = yield* Secrets.Secrets
        const { admin } = yield* team
        assert.strictEqual((yield* secrets.put(admin, "team", "web", "MAX", value("x".repeat(65536)))).version, 1)
        assert.strictEqual((yield* secrets.put(admin, "team", "web", "EMPTY", value(""))).version, 1)
        for (const bad of ["x".repeat(65537), "é".repeat(32769), "a\ud800b"]) {
          const error = yield* Effect.flip(secrets.put(admin, "team", "web", "BIG", value(bad)))
          assert.strictEqual(error._tag, "BadRequest")
          assert.notInclude(error.message, "xxxx")
        }
      })
    )
  )

  it.effect("members may list, put and delete; a viewer gets 403; an outsider 404; an unknown secret 404", () =>
    withCore()(
      Effect.gen(function* () {
        const secrets = yield* Secrets.Secrets
        const { admin } = yield* team
        const { actor: member } = yield* memberOf(admin, "team", "mia", "member")
        const { actor: viewer } = yield* memberOf(admin, "team", "vic", "viewer")
        const { actor: outsider } = yield* signIn("olga")
        yield* secrets.put(member, "team", "web", "K", value("v"))
        assert.deepStrictEqual(
          (yield* secrets.list(member, "team", "web")).map((meta) => meta.name),
          ["K"]
        )
        assert.strictEqual((yield* Effect.flip(secrets.list(viewer, "team", "web")))._tag, "Forbidden")
        assert.strictEqual((yield* Effect.flip(secrets.put(viewer, "team", "web", "K", value("v"))))._tag, "Forbidden")
        assert.strictEqual((yield* Effect.flip(secrets.remove(viewer, "team", "web", "K")))._tag, "Forbidden")
        assert.strictEqual((yield* Effect.flip(secrets.list(outsider, "team", "web")))._tag, "NotFound")
        assert.strictEqual((yield* Effect.flip(secrets.list(member, "team", "nope")))._tag, "NotFound")
        assert.strictEqual((yield* Effect.flip(secrets.remove(member, "team", "web", "NOPE")))._tag, "NotFound")
        yield* secrets.remove(member, "team", "web", "K")
        assert.deepStrictEqual(yield* secrets.list(member, "team", "web"), [])
      })
    )
  )
})
