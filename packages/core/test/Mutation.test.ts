import { assert, describe, it } from "@effect/vitest"
import { Kernel, Orgs, Projects, Secrets } from "@hostplane/core"
import { Effect, Exit } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { auditOf, memberOf, signIn, withCore } from "./support/CoreMemory.ts"

const { Rule } = Kernel

/** An org `team` administered by alice, with the project `web`. */
const team = Effect.gen(function* () {
  const { actor: admin } = yield* signIn("alice")
  yield* (yield* Orgs.Orgs).create(admin, { name: "Team", slug: "team" })
  const project = yield* (yield* Projects.Projects).create(admin, "team", "web")
  return { admin, project }
})

describe("Mutation, the one write envelope", () => {
  it.effect("the change and its audit row commit together, with the actor, the org and the time of the write", () =>
    withCore()(
      Effect.gen(function* () {
        const mutation = yield* Kernel.Mutation
        const { admin, project } = yield* team
        const grant = yield* mutation.authorizeProject(admin, "team", "web", Rule.project("member"))
        const answer = yield* mutation.project(grant, (write) =>
          Effect.succeed(
            Kernel.audited(write.project.id, { action: "secret.set", target: write.project.id, data: { name: "A" } })
          )
        )
        assert.strictEqual(answer, project.id)
        const rows = yield* auditOf("team", "secret.set")
        assert.deepStrictEqual(
          rows.map((row) => [row.actorId, row.target, row.data, row.at]),
          [[admin.userId, project.id, { name: "A" }, "2030-01-01T00:00:00.000Z"]]
        )
        // @ts-expect-error an action outside the closed list does not compile
        Kernel.audited(null, { action: "secret.sett", target: null })
      })
    )
  )

  it.effect("a failing change leaves no audit row; an unaudited one records none", () =>
    withCore()(
      Effect.gen(function* () {
        const mutation = yield* Kernel.Mutation
        const { admin } = yield* team
        const grant = yield* mutation.authorizeOrg(admin, "team", Rule.org("admin"))
        const before = (yield* auditOf("team")).length
        const failed = yield* Effect.flip(
          mutation.org(grant, () =>
            Effect.fail("refused").pipe(Effect.as(Kernel.audited(1, { action: "org.rename", target: "team" })))
          )
        )
        assert.strictEqual(failed, "refused")
        assert.strictEqual(yield* mutation.org(grant, () => Effect.succeed(Kernel.unaudited(2))), 2)
        assert.strictEqual((yield* auditOf("team")).length, before)
      })
    )
  )

  it.effect("a one-statement write hands its store the guard, the audit row and the raise; a refusal is named", () =>
    withCore()(
      Effect.gen(function* () {
        const mutation = yield* Kernel.Mutation
        const secrets = yield* Secrets.SecretStore
        const { admin, project } = yield* team
        const { actor: bob } = yield* memberOf(admin, "team", "bob", "member")
        const grant = yield* mutation.authorizeProject(bob, "team", "web", Rule.project("member"))
        const entry = { action: "secret.set", target: project.id, data: { name: "A" } } as const
        const put = (value: string) =>
          mutation.projectStatement(
            grant,
            ({ project, at, finish }) =>
              secrets.put(project.id, "A", { keyId: "k", ciphertext: value }, at, finish(entry)),
            { node: true }
          )
        const written = yield* put("one")
        assert.strictEqual(written.version, 1)
        const rows = yield* auditOf("team", "secret.set")
        assert.deepStrictEqual(
          rows.map((row) => [row.actorId, row.target, row.data]),
          [[bob.userId, project.id, { name: "A" }]]
        )
        // Demoted, removed, the project's delete accepted: refused as `project` refuses, and nothing written.
        yield* (yield* Orgs.Members).setRole(admin, "team", bob.userId, "viewer")
        assert.strictEqual((yield* Effect.flip(put("two")))._tag, "Forbidden")
        yield* (yield* Orgs.Members).remove(admin, "team", bob.userId)
        assert.strictEqual((yield* Effect.flip(put("two")))._tag, "NotFound")
        const adminGrant = yield* mutation.authorizeProject(admin, "team", "web", Rule.project("member"))
        yield* (yield* Projects.Projects).remove(admin, "team", "web", "web")
        const deleting = yield* Effect.flip(
          mutation.projectStatement(adminGrant, ({ project, at, finish }) =>
            secrets.put(project.id, "A", { keyId: "k", ciphertext: "three" }, at, finish(entry))
          )
        )
        assert.strictEqual(deleting._tag, "OpInFlight")
        assert.strictEqual((yield* auditOf("team", "secret.set")).length, 1)
        assert.strictEqual((yield* secrets.list(project.id))[0]?.version, 1)
      })
    )
  )

  it.effect("a store refusing a one-statement write the rules allow is a defect", () =>
    withCore()(
      Effect.gen(function* () {
        const mutation = yield* Kernel.Mutation
        const { admin } = yield* team
        const grant = yield* mutation.authorizeProject(admin, "team", "web", Rule.project("member"))
        const read = yield* (yield* Kernel.EnvelopeStore).access("team", admin.userId, "web")
        const exit = yield* Effect.exit(
          mutation.projectStatement(grant, () => Effect.fail(new Kernel.EnvelopeRefused({ read })))
        )
        assert.isTrue(Exit.hasDies(exit))
      })
    )
  )

  it.effect("a write to a project whose delete was accepted meanwhile is 409 op_in_flight under the lock", () =>
    withCore()(
      Effect.gen(function* () {
        const mutation = yield* Kernel.Mutation
        const { admin } = yield* team
        const grant = yield* mutation.authorizeProject(admin, "team", "web", Rule.project("member"))
        yield* (yield* Projects.Projects).remove(admin, "team", "web", "web")
        const refused = yield* Effect.flip(mutation.project(grant, () => Effect.succeed(Kernel.unaudited("written"))))
        assert.strictEqual(refused._tag, "OpInFlight")
        const early = yield* Effect.flip(mutation.authorizeProject(admin, "team", "web", Rule.project("member")))
        assert.strictEqual(early._tag, "OpInFlight")
        const allowed = yield* mutation.authorizeProject(
          admin,
          "team",
          "web",
          Rule.project("admin", { deleting: "allow" })
        )
        assert.isNotNull(allowed.project.deletingSince)
      })
    )
  )

  it.effect("a member demoted between authorization and the write is refused with 403 under the lock", () =>
    withCore()(
      Effect.gen(function* () {
        const mutation = yield* Kernel.Mutation
        const { admin } = yield* team
        const { actor: bob } = yield* memberOf(admin, "team", "bob", "member")
        const grant = yield* mutation.authorizeProject(bob, "team", "web", Rule.project("member"))
        yield* (yield* Orgs.Members).setRole(admin, "team", bob.userId, "viewer")
        const refused = yield* Effect.flip(mutation.project(grant, () => Effect.succeed(Kernel.unaudited("written"))))
        assert.strictEqual(refused._tag, "Forbidden")
        yield* (yield* Orgs.Members).remove(admin, "team", bob.userId)
        const gone = yield* Effect.flip(mutation.project(grant, () => Effect.succeed(Kernel.unaudited("written"))))
        assert.strictEqual(gone._tag, "NotFound")
      })
    )
  )
})

describe("a grant the API found is taken only under the same rule object", () => {
  it.effect("the same rule takes the grant without reading again; the write under the lock still checks", () =>
    withCore()(
      Effect.gen(function* () {
        const policy = yield* Kernel.Policy
        const mutation = yield* Kernel.Mutation
        const { admin } = yield* team
        const { actor: bob } = yield* memberOf(admin, "team", "bob", "member")
        const rule = Rule.org("member")
        const granted = yield* policy.grant(bob, "team", undefined, rule)
        yield* (yield* Orgs.Members).remove(admin, "team", bob.userId)
        // The API's check of this request stands for the service: no second read sees the removal.
        const grant = yield* Effect.provideService(
          mutation.authorizeOrg(bob, "team", rule),
          Kernel.CurrentGrant,
          granted
        )
        assert.strictEqual(grant.role, "member")
        const gone = yield* Effect.flip(mutation.org(grant, () => Effect.succeed(Kernel.unaudited("written"))))
        assert.strictEqual(gone._tag, "NotFound")
        // Without the grant, the service reads the access itself.
        const fresh = yield* Effect.flip(mutation.authorizeOrg(bob, "team", rule))
        assert.strictEqual(fresh._tag, "NotFound")
      })
    )
  )

  it.effect("another rule object for the same org is a defect: the endpoint and its service disagree", () =>
    withCore()(
      Effect.gen(function* () {
        const policy = yield* Kernel.Policy
        const { admin } = yield* team
        const granted = yield* policy.grant(admin, "team", "web", Rule.project("viewer"))
        const exit = yield* Effect.exit(
          Effect.provideService(
            policy.requireProject(admin, "team", "web", Rule.project("viewer")),
            Kernel.CurrentGrant,
            granted
          )
        )
        assert.isTrue(Exit.isFailure(exit) && Exit.hasDies(exit))
        // A grant of another caller or org is not this operation's: the service checks by itself.
        const { actor: carol } = yield* signIn("carol")
        const outsider = yield* Effect.flip(
          Effect.provideService(
            policy.requireProject(carol, "team", "web", granted.rule as Kernel.Rule.ProjectRule),
            Kernel.CurrentGrant,
            granted
          )
        )
        assert.strictEqual(outsider._tag, "NotFound")
      })
    )
  )
})

describe("the audit log has one writer", () => {
  it("no core module but Mutation uses the AuditLog port, so every audit action is checked against the list", () => {
    const root = Path.join(import.meta.dirname, "../src")
    const users = Fs.readdirSync(root, { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts"))
      .filter((file) => /\bAuditLog\b/.test(Fs.readFileSync(Path.join(root, file), "utf8")))
      .map((file) => file.split(Path.sep).join("/"))
      .sort()
    // Audit.ts declares the port, KernelArea.ts names it among the kernel's stores.
    assert.deepStrictEqual(users, ["kernel/Audit.ts", "kernel/KernelArea.ts", "kernel/Mutation.ts"])
  })
})
