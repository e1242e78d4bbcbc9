import { assert, layer } from "@effect/vitest"
import { Access, Hostnames, type Kernel, type Orgs, Projects } from "@hostplane/core"
import { Effect, type Layer, Option } from "effect"
import { at, day, givenProject, iso, minute, randomSuffix, uniqueId } from "../contract/Fixtures.ts"

/** What the access contract needs beside `AccessStore`: policies and codes belong to projects, hosts are theirs. */
export type AccessStoreSuiteServices =
  Access.AccessStore | Projects.ProjectStore | Orgs.OrgStore | Kernel.Transactor | Hostnames.HostnameStore

const makeCode = (
  project: Projects.ProjectRow,
  overrides: Partial<Access.AccessCodeRow> = {}
): Access.AccessCodeRow => ({
  codeHash: `code-${randomSuffix()}`,
  host: project.hostname,
  projectId: project.id,
  orgId: project.orgId,
  userId: uniqueId("usr"),
  expiresAt: at(minute),
  createdAt: at(0),
  ...overrides
})

/** The `AccessStore` contract: every adapter must pass it; projects and codes are unique per test. */
export const accessStoreSuite = <E>(name: string, store: Layer.Layer<AccessStoreSuiteServices, E>): void =>
  layer(store)(`${name}: AccessStore contract`, (it) => {
    it.effect("a project that never set a policy has none", () =>
      Effect.gen(function* () {
        const access = yield* Access.AccessStore
        const project = yield* givenProject
        assert.isTrue(Option.isNone(yield* access.findPolicy(project.id)))
      })
    )

    it.effect("setPolicy creates the row without a bypass and answers it", () =>
      Effect.gen(function* () {
        const access = yield* Access.AccessStore
        const project = yield* givenProject
        const expected: Access.AccessPolicyRow = {
          projectId: project.id,
          mode: "password",
          passwordHash: "$scrypt$one",
          passwordGeneration: 1,
          bypassHash: null,
          updatedAt: at(0)
        }
        assert.deepStrictEqual(yield* access.setPolicy(project.id, "password", "$scrypt$one", at(0)), expected)
        assert.deepStrictEqual(yield* access.findPolicy(project.id), Option.some(expected))
      })
    )

    it.effect("setPolicy with a null hash keeps the stored one; with a hash replaces it; the bypass is kept", () =>
      Effect.gen(function* () {
        const access = yield* Access.AccessStore
        const project = yield* givenProject
        yield* access.setPolicy(project.id, "password", "$scrypt$one", at(0))
        yield* access.setBypass(project.id, "bypass-1", at(minute))
        const kept = yield* access.setPolicy(project.id, "org", null, at(2 * minute))
        assert.deepStrictEqual(kept, {
          projectId: project.id,
          mode: "org",
          passwordHash: "$scrypt$one",
          passwordGeneration: 1,
          bypassHash: "bypass-1",
          updatedAt: at(2 * minute)
        })
        const replaced = yield* access.setPolicy(project.id, "public", "$scrypt$two", at(3 * minute))
        assert.strictEqual(replaced.passwordHash, "$scrypt$two")
        assert.strictEqual(replaced.passwordGeneration, 2)
        assert.strictEqual(replaced.bypassHash, "bypass-1")
        assert.deepStrictEqual(yield* access.findPolicy(project.id), Option.some(replaced))
      })
    )

    it.effect("setBypass on a project without a row creates a public one; null clears it and keeps the rest", () =>
      Effect.gen(function* () {
        const access = yield* Access.AccessStore
        const project = yield* givenProject
        yield* access.setBypass(project.id, "bypass-1", at(0))
        assert.deepStrictEqual(
          yield* access.findPolicy(project.id),
          Option.some({
            projectId: project.id,
            mode: "public",
            passwordHash: null,
            passwordGeneration: 0,
            bypassHash: "bypass-1",
            updatedAt: at(0)
          })
        )
        yield* access.setBypass(project.id, "bypass-2", at(minute))
        assert.strictEqual(Option.getOrThrow(yield* access.findPolicy(project.id)).bypassHash, "bypass-2")
        yield* access.setPolicy(project.id, "password", "$scrypt$p", at(2 * minute))
        yield* access.setBypass(project.id, null, at(3 * minute))
        assert.deepStrictEqual(
          yield* access.findPolicy(project.id),
          Option.some({
            projectId: project.id,
            mode: "password",
            passwordHash: "$scrypt$p",
            passwordGeneration: 1,
            bypassHash: null,
            updatedAt: at(3 * minute)
          })
        )
      })
    )

    it.effect("clearing the bypass of a project without a row creates none", () =>
      Effect.gen(function* () {
        const access = yield* Access.AccessStore
        const project = yield* givenProject
        yield* access.setBypass(project.id, null, at(0))
        assert.isTrue(Option.isNone(yield* access.findPolicy(project.id)))
      })
    )

    it.effect("takeCode answers an inserted code once, then none", () =>
      Effect.gen(function* () {
        const access = yield* Access.AccessStore
        const project = yield* givenProject
        const code = makeCode(project)
        yield* access.insertCode(code)
        assert.deepStrictEqual(yield* access.takeCode(code.codeHash, code.host), Option.some(code))
        assert.isTrue(Option.isNone(yield* access.takeCode(code.codeHash, code.host)))
        assert.isTrue(Option.isNone(yield* access.takeCode(`code-${randomSuffix()}`, code.host)))
      })
    )

    it.effect("takeCode at another host answers none and leaves the code for its own host", () =>
      Effect.gen(function* () {
        const access = yield* Access.AccessStore
        const project = yield* givenProject
        const code = makeCode(project)
        yield* access.insertCode(code)
        assert.isTrue(Option.isNone(yield* access.takeCode(code.codeHash, `other-${code.host}`)))
        assert.deepStrictEqual(yield* access.takeCode(code.codeHash, code.host), Option.some(code))
      })
    )

    it.effect("of 10 concurrent takes of one code exactly one gets it", () =>
      Effect.gen(function* () {
        const access = yield* Access.AccessStore
        const project = yield* givenProject
        const code = makeCode(project)
        yield* access.insertCode(code)
        const taken = yield* Effect.forEach(
          Array.from({ length: 10 }, () => code.codeHash),
          (hash) => access.takeCode(hash, code.host),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(taken.filter(Option.isSome).length, 1)
      })
    )

    it.effect("purgeCodes removes the codes expiring at or before the instant and keeps later ones", () =>
      Effect.gen(function* () {
        const access = yield* Access.AccessStore
        const project = yield* givenProject
        // A stretch of time before every other test's codes, so the purge touches only this test's.
        const base = Date.UTC(1900, 0, 1) + Math.floor(Math.random() * 50 * 365) * day
        const early = makeCode(project, { expiresAt: iso(base), createdAt: iso(base - minute) })
        const edge = makeCode(project, { expiresAt: iso(base + minute), createdAt: iso(base) })
        const late = makeCode(project, { expiresAt: iso(base + minute + 1), createdAt: iso(base) })
        for (const code of [early, edge, late]) yield* access.insertCode(code)
        yield* access.purgeCodes(iso(base + minute))
        assert.isTrue(Option.isNone(yield* access.takeCode(early.codeHash, early.host)))
        assert.isTrue(Option.isNone(yield* access.takeCode(edge.codeHash, edge.host)))
        assert.deepStrictEqual(yield* access.takeCode(late.codeHash, late.host), Option.some(late))
      })
    )

    it.effect("findActiveHost answers nothing for a custom hostname still pending_dns, its project once active", () =>
      Effect.gen(function* () {
        const access = yield* Access.AccessStore
        const hostnames = yield* Hostnames.HostnameStore
        const project = yield* givenProject
        const token = `token-${randomSuffix()}`
        const name = `www.h${randomSuffix()}.example`
        yield* hostnames
          .insert({
            name,
            projectId: project.id,
            orgId: project.orgId,
            kind: "custom",
            status: "pending_dns",
            verifyToken: token,
            lastError: null,
            createdAt: at(0),
            verifiedAt: null
          })
          .pipe(Effect.orDie)
        assert.isTrue(Option.isNone(yield* access.findActiveHost(name)))
        yield* hostnames.markActive(name, token, at(minute))
        assert.deepStrictEqual(
          yield* access.findActiveHost(name),
          Option.some({ name, projectId: project.id, orgId: project.orgId })
        )
        yield* hostnames.remove(name)
      })
    )

    it.effect("findActiveHost answers a project's default hostname with its project and org", () =>
      Effect.gen(function* () {
        const access = yield* Access.AccessStore
        const project = yield* givenProject
        assert.deepStrictEqual(
          yield* access.findActiveHost(project.hostname),
          Option.some({ name: project.hostname, projectId: project.id, orgId: project.orgId })
        )
        assert.isTrue(Option.isNone(yield* access.findActiveHost(`missing-${randomSuffix()}.example`)))
        yield* (yield* Projects.ProjectStore).removeHostnames(project.id)
        assert.isTrue(Option.isNone(yield* access.findActiveHost(project.hostname)))
      })
    )

    it.effect("removing the project (ProjectStore.remove) removes its policy and codes", () =>
      Effect.gen(function* () {
        const access = yield* Access.AccessStore
        const project = yield* givenProject
        const code = makeCode(project)
        yield* access.setPolicy(project.id, "org", null, at(0))
        yield* access.insertCode(code)
        yield* (yield* Projects.ProjectStore).remove(project.id)
        assert.isTrue(Option.isNone(yield* access.findPolicy(project.id)))
        assert.isTrue(Option.isNone(yield* access.takeCode(code.codeHash, code.host)))
      })
    )
  })
