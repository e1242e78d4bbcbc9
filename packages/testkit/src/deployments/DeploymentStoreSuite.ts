import { assert, layer } from "@effect/vitest"
import { Deployments, Kernel, Orgs, Projects } from "@hostplane/core"
import { Effect, Exit, type Layer, Option } from "effect"
import { at, givenProject, minute, randomSuffix, uniqueId } from "../contract/Fixtures.ts"

/** What the deployment contract needs beside `DeploymentStore`: deployments belong to projects, which belong to orgs. */
export type DeploymentStoreSuiteServices = Deployments.DeploymentStore | Projects.ProjectStore | Orgs.OrgStore

/** Deployment `version` of `projectId`, created `version` minutes in. */
export const makeDeployment = (
  projectId: Kernel.ProjectId,
  version: number,
  overrides: Partial<Deployments.DeploymentRow> = {}
): Deployments.DeploymentRow => ({
  id: uniqueId("dep"),
  projectId,
  version,
  digest: `sha256:${randomSuffix().repeat(4).slice(0, 64).padEnd(64, "0")}`,
  bytes: 1024 * version,
  files: version,
  createdAt: at(version * minute),
  uploadedBy: uniqueId("usr"),
  manifest: { name: "site" },
  git: null,
  ...overrides
})

/** Inserts versions 1..count of a new project, answering the project and its rows oldest first. */
const givenDeployments = (count: number) =>
  Effect.gen(function* () {
    const store = yield* Deployments.DeploymentStore
    const project = yield* givenProject
    const rows = Array.from({ length: count }, (_, i) => makeDeployment(project.id, i + 1))
    for (const row of rows) yield* store.insert(row)
    return { project, rows }
  })

const versions = (rows: ReadonlyArray<Deployments.DeploymentRow>) => rows.map((row) => row.version)

/** The `DeploymentStore` contract: every adapter must pass it; projects are unique per test so a database may be shared. */
export const deploymentStoreSuite = <E>(name: string, store: Layer.Layer<DeploymentStoreSuiteServices, E>): void =>
  layer(store)(`${name}: DeploymentStore contract`, (it) => {
    it.effect("nextVersion is 1 for a project without deployments, then one past its highest version", () =>
      Effect.gen(function* () {
        const deployments = yield* Deployments.DeploymentStore
        const project = yield* givenProject
        assert.strictEqual(yield* deployments.nextVersion(project.id), 1)
        yield* deployments.insert(makeDeployment(project.id, 1))
        assert.strictEqual(yield* deployments.nextVersion(project.id), 2)
        yield* deployments.insert(makeDeployment(project.id, 2))
        assert.strictEqual(yield* deployments.nextVersion(project.id), 3)
        assert.strictEqual(yield* deployments.nextVersion((yield* givenProject).id), 1)
      })
    )

    it.effect("an inserted deployment is read back as given: sizes beyond 32 bits, manifest flags and git facts", () =>
      Effect.gen(function* () {
        const deployments = yield* Deployments.DeploymentStore
        const project = yield* givenProject
        const row = makeDeployment(project.id, 1, {
          bytes: 5 * 1024 ** 3 + 7,
          files: 20_000,
          manifest: {
            name: "site",
            main: "worker/index.js",
            database: true,
            storage: false,
            email: true,
            auth: false,
            ai: true
          },
          git: {
            commit: "0123456789abcdef0123456789abcdef01234567",
            message: "Ship it: ünïcode ✓",
            branch: "feature/x",
            dirty: false
          }
        })
        yield* deployments.insert(row)
        assert.deepStrictEqual(yield* deployments.get(project.id, row.id), Option.some(row))
        assert.deepStrictEqual(yield* deployments.list(project.id, 10), [row])
      })
    )

    it.effect("an empty manifest and partly unknown git facts are read back as given", () =>
      Effect.gen(function* () {
        const deployments = yield* Deployments.DeploymentStore
        const project = yield* givenProject
        const row = makeDeployment(project.id, 1, {
          manifest: {},
          git: { commit: null, message: null, branch: "main", dirty: null }
        })
        yield* deployments.insert(row)
        assert.deepStrictEqual(yield* deployments.get(project.id, row.id), Option.some(row))
      })
    )

    it.effect("get answers a deployment only under its own project", () =>
      Effect.gen(function* () {
        const deployments = yield* Deployments.DeploymentStore
        const { project, rows } = yield* givenDeployments(1)
        const other = yield* givenProject
        assert.isTrue(Option.isNone(yield* deployments.get(other.id, rows[0]!.id)))
        assert.isTrue(Option.isNone(yield* deployments.get(project.id, uniqueId("dep"))))
      })
    )

    it.effect("list answers newest first, at most limit, and only the project's", () =>
      Effect.gen(function* () {
        const deployments = yield* Deployments.DeploymentStore
        const { project, rows } = yield* givenDeployments(5)
        yield* givenDeployments(2)
        assert.deepStrictEqual(yield* deployments.list(project.id, 10), [...rows].reverse())
        assert.deepStrictEqual(versions(yield* deployments.list(project.id, 2)), [5, 4])
        assert.deepStrictEqual(yield* deployments.list((yield* givenProject).id, 10), [])
      })
    )

    it.effect("list with beforeVersion answers the next page: only versions below it", () =>
      Effect.gen(function* () {
        const deployments = yield* Deployments.DeploymentStore
        const { project } = yield* givenDeployments(5)
        assert.deepStrictEqual(versions(yield* deployments.list(project.id, 2, 4)), [3, 2])
        assert.deepStrictEqual(versions(yield* deployments.list(project.id, 2, 2)), [1])
        assert.deepStrictEqual(yield* deployments.list(project.id, 2, 1), [])
        assert.deepStrictEqual(versions(yield* deployments.list(project.id, 10, 100)), [5, 4, 3, 2, 1])
      })
    )

    it.effect("a deployment of an unknown project is refused as a defect, and nothing is written", () =>
      Effect.gen(function* () {
        const deployments = yield* Deployments.DeploymentStore
        const orphan = makeDeployment(uniqueId("prj"), 1)
        const exit = yield* Effect.exit(deployments.insert(orphan))
        assert.isTrue(Exit.hasDies(exit))
        assert.deepStrictEqual(yield* deployments.list(orphan.projectId, 10), [])
      })
    )
  })
