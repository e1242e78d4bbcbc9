import { assert, layer } from "@effect/vitest"
import { EndUser, type Orgs, type Projects } from "@hostplane/core"
import { Effect, type Layer, Option } from "effect"
import { at, givenProject } from "../contract/Fixtures.ts"

/** What the auth contract needs: grants belong to projects. */
export type AuthStoreSuiteServices = EndUser.AuthStore | Orgs.OrgStore | Projects.ProjectStore

const sealed = (ciphertext: string) => ({ keyId: "k1", ciphertext })

/** The `AuthStore` contract: every adapter must pass it; each test uses its own project. */
export const authStoreSuite = <E>(name: string, store: Layer.Layer<AuthStoreSuiteServices, E>): void =>
  layer(store)(`${name}: AuthStore contract`, (it) => {
    it.effect("a grant is saved, its settings replaced in place, and removed once", () =>
      Effect.gen(function* () {
        const auth = yield* EndUser.AuthStore
        const project = yield* givenProject
        assert.isTrue(Option.isNone(yield* auth.find(project.id)))
        const row = { projectId: project.id, settings: EndUser.defaultAuthSettings, grantedAt: at(0) }
        yield* auth.save(row)
        yield* auth.save({ ...row, settings: { sessionDays: 7, allowSignups: false }, grantedAt: at(5) })
        assert.deepStrictEqual(
          yield* auth.find(project.id),
          Option.some({ ...row, settings: { sessionDays: 7, allowSignups: false } })
        )
        assert.isTrue(yield* auth.remove(project.id))
        assert.isFalse(yield* auth.remove(project.id))
        assert.isTrue(Option.isNone(yield* auth.find(project.id)))
      })
    )

    it.effect(
      "providers are put (replacing the same name), listed by name, removed one by one and with the grant",
      () =>
        Effect.gen(function* () {
          const auth = yield* EndUser.AuthStore
          const project = yield* givenProject
          const other = yield* givenProject
          for (const p of [project, other]) {
            yield* auth.save({ projectId: p.id, settings: EndUser.defaultAuthSettings, grantedAt: at(0) })
          }
          const put = (projectId: typeof project.id, provider: EndUser.AuthProviderName, clientId: string) =>
            auth.putProvider({ projectId, provider, clientId, sealedSecret: sealed(`${clientId}-s`), updatedAt: at(1) })
          yield* put(project.id, "google", "g1")
          yield* put(project.id, "github", "h1")
          yield* put(project.id, "github", "h2")
          yield* put(other.id, "discord", "d1")
          const listed = yield* auth.providers(project.id)
          assert.deepStrictEqual(
            listed.map((row) => [row.provider, row.clientId, row.sealedSecret]),
            [
              ["github", "h2", sealed("h2-s")],
              ["google", "g1", sealed("g1-s")]
            ]
          )
          assert.isTrue(yield* auth.removeProvider(project.id, "google"))
          assert.isFalse(yield* auth.removeProvider(project.id, "google"))
          assert.isTrue(yield* auth.remove(project.id))
          assert.deepStrictEqual(yield* auth.providers(project.id), [])
          assert.strictEqual((yield* auth.providers(other.id)).length, 1)
        })
    )
  })
