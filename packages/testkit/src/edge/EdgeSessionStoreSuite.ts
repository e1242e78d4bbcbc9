import { assert, layer } from "@effect/vitest"
import { Edge, Kernel, Orgs, Projects } from "@hostplane/core"
import { Effect, Exit, type Layer, Option } from "effect"
import { at, day, givenProject, minute, randomSuffix, uniqueId } from "../contract/Fixtures.ts"

/** What the edge-session contract needs beside `EdgeSessionStore`: sessions belong to projects, which belong to orgs. */
export type EdgeSessionStoreSuiteServices = Edge.EdgeSessionStore | Projects.ProjectStore | Orgs.OrgStore

/** A pass to `host` of `projectId`, issued at 0 and good for 12 hours. */
export const makeEdgeSession = (
  projectId: Kernel.ProjectId,
  host: string,
  overrides: Partial<Edge.EdgeSessionRow> = {}
): Edge.EdgeSessionRow => ({
  tokenHash: `hash-${randomSuffix()}`,
  host,
  projectId,
  userId: uniqueId("usr"),
  passwordGeneration: null,
  expiresAt: at(12 * 60 * minute),
  createdAt: at(0),
  ...overrides
})

/** The `EdgeSessionStore` contract: every adapter must pass it; tokens are unique per test so a database may be shared. */
export const edgeSessionStoreSuite = <E>(name: string, store: Layer.Layer<EdgeSessionStoreSuiteServices, E>): void =>
  layer(store)(`${name}: EdgeSessionStore contract`, (it) => {
    it.effect("an unexpired session is found by its token hash on its host, as given", () =>
      Effect.gen(function* () {
        const sessions = yield* Edge.EdgeSessionStore
        const project = yield* givenProject
        const member = makeEdgeSession(project.id, project.hostname)
        const password = makeEdgeSession(project.id, project.hostname, { userId: null, passwordGeneration: 3 })
        yield* sessions.insert(member)
        yield* sessions.insert(password)
        assert.deepStrictEqual(yield* sessions.find(member.tokenHash, member.host, at(minute)), Option.some(member))
        assert.deepStrictEqual(
          yield* sessions.find(password.tokenHash, password.host, at(minute)),
          Option.some(password)
        )
      })
    )

    it.effect("a session is bound to its host: the same token on another host is none", () =>
      Effect.gen(function* () {
        const sessions = yield* Edge.EdgeSessionStore
        const project = yield* givenProject
        const session = makeEdgeSession(project.id, project.hostname)
        yield* sessions.insert(session)
        assert.isTrue(Option.isNone(yield* sessions.find(session.tokenHash, `other.${project.hostname}`, at(0))))
        assert.isTrue(Option.isNone(yield* sessions.find(`hash-${randomSuffix()}`, session.host, at(0))))
      })
    )

    it.effect("a session ends at its expiresAt: found a millisecond before, none at it and after", () =>
      Effect.gen(function* () {
        const sessions = yield* Edge.EdgeSessionStore
        const project = yield* givenProject
        const session = makeEdgeSession(project.id, project.hostname, { expiresAt: at(day) })
        yield* sessions.insert(session)
        assert.isTrue(Option.isSome(yield* sessions.find(session.tokenHash, session.host, at(day - 1))))
        assert.isTrue(Option.isNone(yield* sessions.find(session.tokenHash, session.host, at(day))))
        assert.isTrue(Option.isNone(yield* sessions.find(session.tokenHash, session.host, at(day + 1))))
      })
    )

    it.effect("a session of an unknown project is refused as a defect, and nothing is written", () =>
      Effect.gen(function* () {
        const sessions = yield* Edge.EdgeSessionStore
        const orphan = makeEdgeSession(uniqueId("prj"), `h${randomSuffix()}.example`)
        assert.isTrue(Exit.hasDies(yield* Effect.exit(sessions.insert(orphan))))
        assert.isTrue(Option.isNone(yield* sessions.find(orphan.tokenHash, orphan.host, at(0))))
      })
    )
  })
