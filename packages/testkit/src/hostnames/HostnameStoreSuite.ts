import { assert, layer } from "@effect/vitest"
import { Hostnames, Orgs, Projects } from "@hostplane/core"
import { Effect, type Layer, Option } from "effect"
import { day, iso, makeOrg, minute, randomSuffix, uniqueId } from "../contract/Fixtures.ts"

/** What the hostname contract needs beside `HostnameStore`: rows belong to projects, which belong to orgs. */
export type HostnameStoreSuiteServices = Hostnames.HostnameStore | Projects.ProjectStore | Orgs.OrgStore

interface Window {
  /** An instant `offsetMs` into this test's private stretch of time. */
  readonly t: (offsetMs: number) => string
  /** A new project (with its default hostname) in a new org, created at `t(0)`. */
  readonly project: Effect.Effect<Projects.ProjectRow>
  /** Inserts a pending custom name of `project` created (and due) at `t(offsetMs)`; removed when the test ends. */
  readonly add: (project: Projects.ProjectRow, offsetMs: number) => Effect.Effect<Hostnames.HostnameRow>
}

const uniqueHost = () => `www.h${randomSuffix()}.example`

/**
 * Runs a test in its own random stretch of time between 1800 and 1960 (see the mail outbox contract): rows of other
 * tests are due later or are removed when their test ends, so this test's claims never take them.
 */
const inWindow = <A, E, R>(test: (window: Window) => Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const store = yield* Hostnames.HostnameStore
    const projects = yield* Projects.ProjectStore
    const orgs = yield* Orgs.OrgStore
    const base = Date.UTC(1800, 0, 1) + Math.floor(Math.random() * 160 * 365) * day
    const t = (offsetMs: number) => iso(base + offsetMs)
    const own = new Set<string>()
    const window: Window = {
      t,
      project: Effect.gen(function* () {
        const org = makeOrg()
        yield* orgs.insert(org)
        const name = `p-${randomSuffix()}`
        const row: Projects.ProjectRow = {
          id: uniqueId("prj"),
          orgId: org.id,
          name,
          hostname: `${name}.apps.contract.test`,
          createdAt: t(0),
          liveDeploymentId: null,
          deletingSince: null
        }
        yield* projects.insert(row)
        return row
      }).pipe(Effect.orDie),
      add: (project, offsetMs) =>
        Effect.gen(function* () {
          const row: Hostnames.HostnameRow = {
            name: uniqueHost(),
            projectId: project.id,
            orgId: project.orgId,
            kind: "custom",
            status: "pending_dns",
            verifyToken: `token-${randomSuffix()}`,
            lastError: null,
            createdAt: t(offsetMs),
            verifiedAt: null
          }
          own.add(row.name)
          yield* store.insert(row)
          return row
        }).pipe(Effect.orDie)
    }
    return yield* test(window).pipe(
      Effect.ensuring(Effect.forEach(own, (name) => store.remove(name), { discard: true }))
    )
  })

const names = (rows: ReadonlyArray<{ readonly name: string }>) => rows.map((row) => row.name)

/** The `HostnameStore` contract: every adapter must pass it. Tests work in private stretches of time and names. */
export const hostnameStoreSuite = <E>(name: string, store: Layer.Layer<HostnameStoreSuiteServices, E>): void =>
  layer(store)(`${name}: HostnameStore contract`, (it) => {
    it.effect("an inserted custom name is found as given; unknown names are none", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const hostnames = yield* Hostnames.HostnameStore
          const project = yield* w.project
          const row = yield* w.add(project, 0)
          assert.deepStrictEqual(yield* hostnames.find(row.name), Option.some(row))
          assert.isTrue(Option.isNone(yield* hostnames.find(uniqueHost())))
        })
      )
    )

    it.effect("the default hostname a project insert writes is found, active and without a token", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const hostnames = yield* Hostnames.HostnameStore
          const project = yield* w.project
          const row = Option.getOrThrow(yield* hostnames.find(project.hostname))
          assert.deepStrictEqual(row, {
            name: project.hostname,
            projectId: project.id,
            orgId: project.orgId,
            kind: "default",
            status: "active",
            verifyToken: null,
            lastError: null,
            createdAt: w.t(0),
            verifiedAt: w.t(0)
          })
        })
      )
    )

    it.effect(
      "a name is unique across projects and orgs: a taken custom or default name fails with HostnameTaken",
      () =>
        inWindow((w) =>
          Effect.gen(function* () {
            const hostnames = yield* Hostnames.HostnameStore
            const first = yield* w.project
            const second = yield* w.project
            const row = yield* w.add(first, 0)
            const clash = { ...row, projectId: second.id, orgId: second.orgId, verifyToken: "other" }
            assert.strictEqual((yield* Effect.flip(hostnames.insert(clash)))._tag, "HostnameTaken")
            assert.deepStrictEqual(yield* hostnames.find(row.name), Option.some(row))
            const onDefault = { ...clash, name: first.hostname }
            assert.strictEqual((yield* Effect.flip(hostnames.insert(onDefault)))._tag, "HostnameTaken")
            assert.strictEqual(Option.getOrThrow(yield* hostnames.find(first.hostname)).kind, "default")
          })
        )
    )

    it.effect("listByProject: the default first, then custom names by creation time and name; no other project's", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const hostnames = yield* Hostnames.HostnameStore
          const project = yield* w.project
          const other = yield* w.project
          const late = yield* w.add(project, 2 * minute)
          const early = yield* w.add(project, minute)
          const tieA = yield* w.add(project, 3 * minute)
          const tieB = yield* w.add(project, 3 * minute)
          yield* w.add(other, 0)
          const ties = [tieA.name, tieB.name].sort()
          assert.deepStrictEqual(names(yield* hostnames.listByProject(project.id)), [
            project.hostname,
            early.name,
            late.name,
            ...ties
          ])
        })
      )
    )

    it.effect("remove deletes the row and frees the name; removing an unknown name does nothing", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const hostnames = yield* Hostnames.HostnameStore
          const project = yield* w.project
          const other = yield* w.project
          const row = yield* w.add(project, 0)
          yield* hostnames.remove(row.name)
          yield* hostnames.remove(uniqueHost())
          assert.isTrue(Option.isNone(yield* hostnames.find(row.name)))
          const again = { ...row, projectId: other.id, orgId: other.orgId }
          yield* hostnames.insert(again)
          assert.deepStrictEqual(yield* hostnames.find(row.name), Option.some(again))
        })
      )
    )

    it.effect("markActive makes the row active, clears lastError, sets verifiedAt once, and answers the row", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const hostnames = yield* Hostnames.HostnameStore
          const row = yield* w.add(yield* w.project, 0)
          const token = row.verifyToken ?? ""
          yield* hostnames.recordFailure(row.name, token, "no TXT record")
          const active = { ...row, status: "active" as const, lastError: null, verifiedAt: w.t(minute) }
          assert.deepStrictEqual(yield* hostnames.markActive(row.name, token, w.t(minute)), Option.some(active))
          assert.deepStrictEqual(yield* hostnames.markActive(row.name, token, w.t(2 * minute)), Option.some(active))
          assert.deepStrictEqual(yield* hostnames.find(row.name), Option.some(active))
        })
      )
    )

    it.effect("markActive and recordFailure with another token change nothing and answer none", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const hostnames = yield* Hostnames.HostnameStore
          const row = yield* w.add(yield* w.project, 0)
          assert.isTrue(Option.isNone(yield* hostnames.markActive(row.name, "stale", w.t(minute))))
          assert.isTrue(Option.isNone(yield* hostnames.recordFailure(row.name, "stale", "observed")))
          assert.isTrue(Option.isNone(yield* hostnames.markActive(uniqueHost(), "stale", w.t(minute))))
          assert.deepStrictEqual(yield* hostnames.find(row.name), Option.some(row))
        })
      )
    )

    it.effect("recordFailure keeps a pending row pending with lastError; an active row is left alone", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const hostnames = yield* Hostnames.HostnameStore
          const row = yield* w.add(yield* w.project, 0)
          const token = row.verifyToken ?? ""
          const failed = yield* hostnames.recordFailure(row.name, token, "TXT: none")
          assert.deepStrictEqual(failed, Option.some({ ...row, lastError: "TXT: none" }))
          const active = Option.getOrThrow(yield* hostnames.markActive(row.name, token, w.t(minute)))
          assert.deepStrictEqual(yield* hostnames.recordFailure(row.name, token, "late failure"), Option.some(active))
        })
      )
    )

    it.effect("a name removed and added again is a new row, with its own token", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const hostnames = yield* Hostnames.HostnameStore
          const project = yield* w.project
          const row = yield* w.add(project, 0)
          yield* hostnames.remove(row.name)
          const again = { ...row, verifyToken: `token-${randomSuffix()}`, createdAt: w.t(minute) }
          yield* hostnames.insert(again)
          assert.isTrue(Option.isNone(yield* hostnames.markActive(row.name, row.verifyToken ?? "", w.t(minute))))
          assert.deepStrictEqual(yield* hostnames.find(row.name), Option.some(again))
        })
      )
    )

    it.effect("a project's removeHostnames drops its custom names with the default one", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const hostnames = yield* Hostnames.HostnameStore
          const project = yield* w.project
          const row = yield* w.add(project, 0)
          yield* (yield* Projects.ProjectStore).removeHostnames(project.id)
          assert.deepStrictEqual(yield* hostnames.listByProject(project.id), [])
          assert.isTrue(Option.isNone(yield* hostnames.find(row.name)))
        })
      )
    )
  })
