import { assert, layer } from "@effect/vitest"
import { Deployments, Edge, Hostnames, Kernel, Orgs, Projects, Secrets } from "@hostplane/core"
import { Effect, type Layer, Option } from "effect"
import { makeDeployment } from "../deployments/DeploymentStoreSuite.ts"
import { makeEdgeSession } from "../edge/EdgeSessionStoreSuite.ts"
import { at, day, makeOrg, makeProject, minute, randomSuffix, uniqueId } from "../contract/Fixtures.ts"

/** What the project contract needs beside `ProjectStore`: projects belong to orgs, and own the rows a remove drops. */
export type ProjectStoreSuiteServices =
  | Projects.ProjectStore
  | Orgs.OrgStore
  | Hostnames.HostnameStore
  | Deployments.DeploymentStore
  | Secrets.SecretStore
  | Edge.EdgeSessionStore

const givenOrg = Effect.gen(function* () {
  const org = makeOrg()
  yield* (yield* Orgs.OrgStore).insert(org)
  return org
}).pipe(Effect.orDie)

/** A project inserted into `orgId`. */
const given = (orgId: Kernel.OrgId, overrides: Partial<Projects.ProjectRow> = {}) =>
  Effect.gen(function* () {
    const row = makeProject(orgId, overrides)
    yield* (yield* Projects.ProjectStore).insert(row)
    return row
  }).pipe(Effect.orDie)

/** The `ProjectStore` contract: every adapter must pass it; orgs and names are unique per test so a database may be shared. */
export const projectStoreSuite = <E>(name: string, store: Layer.Layer<ProjectStoreSuiteServices, E>): void =>
  layer(store)(`${name}: ProjectStore contract`, (it) => {
    it.effect("an inserted project is found by id and by its org and name as given; unknown ones are none", () =>
      Effect.gen(function* () {
        const projects = yield* Projects.ProjectStore
        const org = yield* givenOrg
        const other = yield* givenOrg
        const row = yield* given(org.id)
        assert.deepStrictEqual(yield* projects.findById(row.id), Option.some(row))
        assert.deepStrictEqual(yield* projects.findByName(org.id, row.name), Option.some(row))
        assert.isTrue(Option.isNone(yield* projects.findByName(other.id, row.name)))
        assert.isTrue(Option.isNone(yield* projects.findByName(org.id, `p-${randomSuffix()}`)))
        assert.isTrue(Option.isNone(yield* projects.findById(uniqueId("prj"))))
      })
    )

    it.effect("a name is unique in its org: a second insert fails with ProjectNameTaken and writes nothing", () =>
      Effect.gen(function* () {
        const projects = yield* Projects.ProjectStore
        const hostnames = yield* Hostnames.HostnameStore
        const org = yield* givenOrg
        const row = yield* given(org.id)
        const clash = makeProject(org.id, { name: row.name, hostname: `other-${randomSuffix()}.apps.contract.test` })
        assert.strictEqual((yield* Effect.flip(projects.insert(clash)))._tag, "ProjectNameTaken")
        assert.isTrue(Option.isNone(yield* projects.findById(clash.id)))
        assert.isTrue(Option.isNone(yield* hostnames.find(clash.hostname)))
        assert.deepStrictEqual(yield* projects.list(org.id), [row])
      })
    )

    it.effect("the same name in another org is another project", () =>
      Effect.gen(function* () {
        const projects = yield* Projects.ProjectStore
        const first = yield* given((yield* givenOrg).id)
        const otherOrg = yield* givenOrg
        const second = yield* given(otherOrg.id, {
          name: first.name,
          hostname: `${first.name}-2.apps.contract.test`
        })
        assert.deepStrictEqual(yield* projects.findByName(otherOrg.id, first.name), Option.some(second))
        assert.deepStrictEqual(yield* projects.findByName(first.orgId, first.name), Option.some(first))
      })
    )

    it.effect(
      "a hostname any project of any org holds (default or custom) fails with HostnameTaken and writes no project",
      () =>
        Effect.gen(function* () {
          const projects = yield* Projects.ProjectStore
          const hostnames = yield* Hostnames.HostnameStore
          const holder = yield* given((yield* givenOrg).id)
          const custom = `www.c${randomSuffix()}.example`
          yield* hostnames.insert({
            name: custom,
            projectId: holder.id,
            orgId: holder.orgId,
            kind: "custom",
            status: "pending_dns",
            verifyToken: "token",
            lastError: null,
            createdAt: at(0),
            verifiedAt: null
          })
          const org = yield* givenOrg
          for (const hostname of [holder.hostname, custom]) {
            const row = makeProject(org.id, { hostname })
            assert.strictEqual((yield* Effect.flip(projects.insert(row)))._tag, "HostnameTaken")
            assert.isTrue(Option.isNone(yield* projects.findById(row.id)))
            assert.isTrue(Option.isNone(yield* projects.findByName(org.id, row.name)))
            assert.strictEqual(Option.getOrThrow(yield* hostnames.find(hostname)).projectId, holder.id)
          }
          assert.strictEqual(yield* projects.count(org.id), 0)
        })
    )

    it.effect("concurrent inserts of one name in one org: exactly one succeeds, the others are ProjectNameTaken", () =>
      Effect.gen(function* () {
        const projects = yield* Projects.ProjectStore
        const org = yield* givenOrg
        const name = `p-${randomSuffix()}`
        const rows = Array.from({ length: 6 }, (_, i) =>
          makeProject(org.id, { name, hostname: `${name}-${i}.apps.contract.test` })
        )
        const results = yield* Effect.forEach(rows, (row) => Effect.result(projects.insert(row)), {
          concurrency: "unbounded"
        })
        const failures = results.filter((result) => result._tag === "Failure")
        assert.strictEqual(results.length - failures.length, 1)
        for (const failure of failures) assert.strictEqual(failure.failure._tag, "ProjectNameTaken")
        assert.strictEqual((yield* projects.list(org.id)).length, 1)
      })
    )

    it.effect("list answers the org's projects by name in code-unit order, and no other org's", () =>
      Effect.gen(function* () {
        const projects = yield* Projects.ProjectStore
        const org = yield* givenOrg
        const tag = randomSuffix().slice(0, 8)
        // Hyphens and digits sort apart in code-unit order; a linguistic collation would interleave them.
        for (const name of ["b", "a-c", "ab", "a-b", "a1", "a0"]) yield* given(org.id, { name: `${name}-${tag}` })
        yield* given((yield* givenOrg).id, { name: `a-a-${tag}` })
        assert.deepStrictEqual(
          (yield* projects.list(org.id)).map((row) => row.name),
          ["a-b", "a-c", "a0", "a1", "ab", "b"].map((name) => `${name}-${tag}`)
        )
        assert.deepStrictEqual(yield* projects.list((yield* givenOrg).id), [])
      })
    )

    it.effect("count counts every project of the org, deleting ones included", () =>
      Effect.gen(function* () {
        const projects = yield* Projects.ProjectStore
        const org = yield* givenOrg
        const first = yield* given(org.id)
        yield* given(org.id)
        yield* given((yield* givenOrg).id)
        yield* projects.markDeleting(first.id, at(minute))
        assert.strictEqual(yield* projects.count(org.id), 2)
        assert.strictEqual(yield* projects.count((yield* givenOrg).id), 0)
      })
    )

    it.effect("markDeleting records the first instant only; the project stays readable and listed", () =>
      Effect.gen(function* () {
        const projects = yield* Projects.ProjectStore
        const row = yield* given((yield* givenOrg).id)
        yield* projects.markDeleting(row.id, at(minute))
        yield* projects.markDeleting(row.id, at(day))
        const deleting = { ...row, deletingSince: at(minute) }
        assert.deepStrictEqual(yield* projects.findById(row.id), Option.some(deleting))
        assert.deepStrictEqual(yield* projects.findByName(row.orgId, row.name), Option.some(deleting))
        assert.deepStrictEqual(yield* projects.list(row.orgId), [deleting])
      })
    )

    it.effect("setLiveDeployment moves the live pointer; writes to an unknown project change nothing", () =>
      Effect.gen(function* () {
        const projects = yield* Projects.ProjectStore
        const row = yield* given((yield* givenOrg).id)
        yield* projects.setLiveDeployment(row.id, Kernel.makeId("dep", "dep_first"))
        yield* projects.setLiveDeployment(row.id, Kernel.makeId("dep", "dep_second"))
        assert.deepStrictEqual(
          yield* projects.findById(row.id),
          Option.some({ ...row, liveDeploymentId: Kernel.makeId("dep", "dep_second") })
        )
        const unknown = uniqueId("prj")
        yield* projects.setLiveDeployment(unknown, uniqueId("dep"))
        yield* projects.markDeleting(unknown, at(0))
        yield* projects.removeHostnames(unknown)
        yield* projects.remove(unknown)
        assert.isTrue(Option.isNone(yield* projects.findById(unknown)))
      })
    )

    it.effect("removeHostnames drops the project's hostnames only: the project and other projects' names stay", () =>
      Effect.gen(function* () {
        const projects = yield* Projects.ProjectStore
        const hostnames = yield* Hostnames.HostnameStore
        const org = yield* givenOrg
        const row = yield* given(org.id)
        const other = yield* given(org.id)
        yield* projects.removeHostnames(row.id)
        assert.isTrue(Option.isNone(yield* hostnames.find(row.hostname)))
        assert.deepStrictEqual(yield* projects.findById(row.id), Option.some(row))
        assert.strictEqual(Option.getOrThrow(yield* hostnames.find(other.hostname)).projectId, other.id)
      })
    )

    it.effect(
      "remove drops the project with its hostnames, deployments, secrets and edge sessions; the name is free again",
      () =>
        Effect.gen(function* () {
          const projects = yield* Projects.ProjectStore
          const hostnames = yield* Hostnames.HostnameStore
          const deployments = yield* Deployments.DeploymentStore
          const secrets = yield* Secrets.SecretStore
          const sessions = yield* Edge.EdgeSessionStore
          const org = yield* givenOrg
          const row = yield* given(org.id)
          const kept = yield* given(org.id)
          const deployment = makeDeployment(row.id, 1)
          yield* deployments.insert(deployment)
          yield* deployments.insert(makeDeployment(kept.id, 1))
          yield* secrets.put(row.id, "API_KEY", { keyId: "k1", ciphertext: "c2VhbGVk" }, at(0))
          const session = makeEdgeSession(row.id, row.hostname)
          const keptSession = makeEdgeSession(kept.id, kept.hostname)
          yield* sessions.insert(session)
          yield* sessions.insert(keptSession)

          yield* projects.remove(row.id)
          yield* projects.remove(row.id)

          assert.isTrue(Option.isNone(yield* projects.findById(row.id)))
          assert.isTrue(Option.isNone(yield* hostnames.find(row.hostname)))
          assert.isTrue(Option.isNone(yield* deployments.get(row.id, deployment.id)))
          assert.deepStrictEqual(yield* deployments.list(row.id, 10), [])
          assert.deepStrictEqual(yield* secrets.list(row.id), [])
          assert.isTrue(Option.isNone(yield* sessions.find(session.tokenHash, session.host, at(0))))
          assert.deepStrictEqual(yield* projects.list(org.id), [kept])
          assert.strictEqual((yield* deployments.list(kept.id, 10)).length, 1)
          assert.isTrue(Option.isSome(yield* sessions.find(keptSession.tokenHash, keptSession.host, at(0))))
          const again = yield* given(org.id, { name: row.name, hostname: row.hostname })
          assert.deepStrictEqual(yield* projects.findByName(org.id, row.name), Option.some(again))
        })
    )
  })
