import { assert, layer } from "@effect/vitest"
import { Database, Kernel, Orgs, Projects } from "@hostplane/core"
import { Effect, Option, type Layer } from "effect"
import { at, givenProject, minute } from "../contract/Fixtures.ts"

export type DatabaseStoreSuiteServices =
  Database.DatabaseStore | Projects.ProjectStore | Orgs.OrgStore | Kernel.Transactor

const sealed = { keyId: "k1", ciphertext: "c2VhbGVk" }

const generation = (projectId: Kernel.ProjectId, epoch: number, seq: number): Database.GenerationRow => ({
  projectId,
  epoch,
  seq,
  bytes: 5_000_000_000,
  sha256: "ab".repeat(32),
  offsiteKey: `${projectId}/${epoch}-${seq}.tar.gz`,
  createdAt: at(epoch * minute + seq),
  lastCheckedAt: null,
  checkFailedAt: null
})

/** The `DatabaseStore` contract: every adapter must pass it; projects are unique per test. */
export const databaseStoreSuite = <E>(name: string, stores: Layer.Layer<DatabaseStoreSuiteServices, E>): void =>
  layer(stores)(`${name}: DatabaseStore contract`, (it) => {
    it.effect("create keeps the first record: a second create answers it unchanged", () =>
      Effect.gen(function* () {
        const store = yield* Database.DatabaseStore
        const project = yield* givenProject
        assert.isTrue(Option.isNone(yield* store.find(project.id)))
        const first = yield* store.create(project.id, sealed, at(0), null)
        assert.deepStrictEqual(first, {
          projectId: project.id,
          sealedPassword: sealed,
          epoch: 1,
          operationId: null,
          createdAt: at(0),
          home: null,
          endpoint: null
        })
        assert.deepStrictEqual(
          yield* store.create(project.id, { keyId: "k2", ciphertext: "b3RoZXI=" }, at(minute), "node_b"),
          first
        )
        assert.include(yield* store.projects, project.id)
      })
    )

    it.effect("a database is homed once: place records the first home and its endpoint, and refuses another", () =>
      Effect.gen(function* () {
        const store = yield* Database.DatabaseStore
        const homed = yield* givenProject
        const created = yield* store.create(homed.id, sealed, at(0), "node_a")
        assert.deepStrictEqual([created.home, created.endpoint], ["node_a", null])
        const endpoint = { host: "db.example", port: 5433, sslmode: "require" as const }
        assert.isTrue(yield* store.place(homed.id, "node_a", endpoint))
        assert.isFalse(yield* store.place(homed.id, "node_b", { ...endpoint, port: 1 }))
        assert.deepStrictEqual(
          Option.map(yield* store.find(homed.id), (row) => [row.home, row.endpoint]),
          Option.some(["node_a", endpoint])
        )
        // A record from before homes is taken by the first replica that places it.
        const legacy = yield* givenProject
        yield* store.create(legacy.id, sealed, at(0), null)
        assert.isTrue(yield* store.place(legacy.id, "node_b", endpoint))
        assert.isFalse(yield* store.place(legacy.id, "node_a", endpoint))
        assert.deepStrictEqual(
          Option.map(yield* store.find(legacy.id), (row) => row.home),
          Option.some("node_b")
        )
      })
    )

    it.effect("move rehomes a database held by nothing from its home, held by the rebuild, without an endpoint", () =>
      Effect.gen(function* () {
        const store = yield* Database.DatabaseStore
        const project = yield* givenProject
        yield* store.create(project.id, sealed, at(0), "node_a")
        const endpoint = { host: "db.example", port: 5433, sslmode: "require" as const }
        yield* store.place(project.id, "node_a", endpoint)
        assert.isFalse(yield* store.move(project.id, "node_c", "node_b", "op_1"), "only from its home")
        assert.isTrue(yield* store.move(project.id, "node_a", "node_b", "op_1"))
        assert.deepStrictEqual(
          Option.map(yield* store.find(project.id), (row) => [row.home, row.endpoint, row.operationId]),
          Option.some(["node_b", null, "op_1"])
        )
        assert.isFalse(yield* store.move(project.id, "node_a", "node_c", "op_2"), "moved once")
        const held = yield* givenProject
        yield* store.create(held.id, sealed, at(0), "node_a")
        assert.isTrue(yield* store.holdFor(held.id, "op_3"))
        assert.isFalse(yield* store.move(held.id, "node_a", "node_b", "op_4"), "never under another operation")
        assert.strictEqual(Option.map(yield* store.find(held.id), (row) => row.home).pipe(Option.getOrNull), "node_a")
      })
    )

    it.effect("holdFor takes the database for one operation at a time; null releases it", () =>
      Effect.gen(function* () {
        const store = yield* Database.DatabaseStore
        const project = yield* givenProject
        yield* store.create(project.id, sealed, at(0), null)
        assert.isTrue(yield* store.holdFor(project.id, "op_1"))
        assert.isFalse(yield* store.holdFor(project.id, "op_2"))
        assert.isTrue(yield* store.holdFor(project.id, null))
        assert.isTrue(yield* store.holdFor(project.id, "op_2"))
        yield* store.setEpoch(project.id, 3)
        assert.deepStrictEqual(
          Option.map(yield* store.find(project.id), (row) => [row.epoch, row.operationId]),
          Option.some([3, "op_2"])
        )
      })
    )

    it.effect("tokens are listed oldest first, removed once; remove drops tokens and keeps generations", () =>
      Effect.gen(function* () {
        const store = yield* Database.DatabaseStore
        const project = yield* givenProject
        yield* store.create(project.id, sealed, at(0), null)
        yield* store.addToken({ projectId: project.id, user: "tok_b", verifier: "v-b", createdAt: at(minute) })
        yield* store.addToken({ projectId: project.id, user: "tok_a", verifier: "v-a", createdAt: at(2 * minute) })
        assert.deepStrictEqual(
          (yield* store.tokens(project.id)).map((token) => [token.user, token.verifier]),
          [
            ["tok_b", "v-b"],
            ["tok_a", "v-a"]
          ]
        )
        assert.isTrue(yield* store.removeToken(project.id, "tok_b"))
        assert.isFalse(yield* store.removeToken(project.id, "tok_b"))
        yield* store.addGeneration(generation(project.id, 1, 1))
        yield* store.remove(project.id)
        assert.isTrue(Option.isNone(yield* store.find(project.id)))
        assert.deepStrictEqual(yield* store.tokens(project.id), [])
        assert.strictEqual((yield* store.generations(project.id)).length, 1)
      })
    )

    it.effect("generations are newest first by epoch then seq; checks record success and failure apart", () =>
      Effect.gen(function* () {
        const store = yield* Database.DatabaseStore
        const project = yield* givenProject
        for (const [epoch, seq] of [
          [1, 1],
          [2, 1],
          [1, 2],
          [2, 2]
        ] as const) {
          yield* store.addGeneration(generation(project.id, epoch, seq))
        }
        assert.deepStrictEqual(
          (yield* store.generations(project.id)).map((g) => [g.epoch, g.seq]),
          [
            [2, 2],
            [2, 1],
            [1, 2],
            [1, 1]
          ]
        )
        yield* store.checked(project.id, 2, 2, at(10 * minute), true)
        yield* store.checked(project.id, 1, 1, at(11 * minute), false)
        const [newest] = yield* store.generations(project.id)
        assert.deepStrictEqual(newest, { ...generation(project.id, 2, 2), lastCheckedAt: at(10 * minute) })
        const oldest = (yield* store.generations(project.id)).at(-1)
        assert.deepStrictEqual(oldest, { ...generation(project.id, 1, 1), checkFailedAt: at(11 * minute) })
        yield* store.removeGenerations(project.id)
        assert.deepStrictEqual(yield* store.generations(project.id), [])
      })
    )
  })
