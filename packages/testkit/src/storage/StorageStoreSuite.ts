import { assert, layer } from "@effect/vitest"
import { Kernel, type Orgs, Projects, Storage } from "@hostplane/core"
import { Effect, Exit, type Layer, Option, Schema } from "effect"
import { givenProject, uniqueId } from "../contract/Fixtures.ts"

/** What the storage contract needs: rows belong to projects, and writes join transactions. */
export type StorageStoreSuiteServices = Storage.StorageStore | Orgs.OrgStore | Projects.ProjectStore | Kernel.Transactor

class Boom extends Schema.TaggedError<Boom>()("Boom", {}) {}

/** The `StorageStore` contract: every adapter must pass it; projects are unique per test. */
export const storageStoreSuite = <E>(name: string, store: Layer.Layer<StorageStoreSuiteServices, E>): void =>
  layer(store)(`${name}: StorageStore contract`, (it) => {
    it.effect("the first grant makes the row with its prefix; later changes keep the prefix and the usage", () =>
      Effect.gen(function* () {
        const storage = yield* Storage.StorageStore
        const project = yield* givenProject
        assert.isTrue(Option.isNone(yield* storage.find(project.id)))
        yield* storage.setGranted(project.id, `${project.id}/`, true)
        const row = { projectId: project.id, prefix: `${project.id}/`, granted: true, usedBytes: 0 }
        assert.deepStrictEqual(yield* storage.find(project.id), Option.some(row))
        assert.deepStrictEqual(yield* storage.recordUsage([{ projectId: project.id, storageBytes: 5 * 2 ** 40 }]), [
          project.id
        ])
        yield* storage.setGranted(project.id, "another/", false)
        assert.deepStrictEqual(
          yield* storage.find(project.id),
          Option.some({ ...row, granted: false, usedBytes: 5 * 2 ** 40 })
        )
        yield* storage.setGranted(project.id, "another/", true)
        assert.deepStrictEqual(yield* storage.find(project.id), Option.some({ ...row, usedBytes: 5 * 2 ** 40 }))
      })
    )

    it.effect("usage is recorded for projects holding a row, revoked ones included; other ids are left out", () =>
      Effect.gen(function* () {
        const storage = yield* Storage.StorageStore
        const granted = yield* givenProject
        const revoked = yield* givenProject
        const never = yield* givenProject
        yield* storage.setGranted(granted.id, `${granted.id}/`, true)
        yield* storage.setGranted(revoked.id, `${revoked.id}/`, false)
        const recorded = yield* storage.recordUsage([
          { projectId: granted.id, storageBytes: 1234 },
          { projectId: revoked.id, storageBytes: 0 },
          { projectId: never.id, storageBytes: 7 },
          { projectId: uniqueId("prj"), storageBytes: 9 }
        ])
        assert.deepStrictEqual([...recorded].sort(), [granted.id, revoked.id].sort())
        assert.strictEqual(Option.getOrThrow(yield* storage.find(granted.id)).usedBytes, 1234)
        assert.isTrue(Option.isNone(yield* storage.find(never.id)))
        assert.deepStrictEqual(yield* storage.recordUsage([]), [])
      })
    )

    it.effect("a grant in a failed transaction is undone; the row goes with its project", () =>
      Effect.gen(function* () {
        const storage = yield* Storage.StorageStore
        const tx = yield* Kernel.Transactor
        const project = yield* givenProject
        const failed = yield* Effect.exit(
          tx.withTransaction(
            Effect.andThen(storage.setGranted(project.id, `${project.id}/`, true), Effect.fail(new Boom()))
          )
        )
        assert.isTrue(Exit.isFailure(failed))
        assert.isTrue(Option.isNone(yield* storage.find(project.id)))
        yield* storage.setGranted(project.id, `${project.id}/`, true)
        yield* (yield* Projects.ProjectStore).remove(project.id)
        assert.isTrue(Option.isNone(yield* storage.find(project.id)))
        assert.deepStrictEqual(yield* storage.recordUsage([{ projectId: project.id, storageBytes: 1 }]), [])
      })
    )
  })
