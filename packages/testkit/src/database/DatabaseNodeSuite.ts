import { assert, layer } from "@effect/vitest"
import { Database, Kernel } from "@hostplane/core"
import { Effect, Exit, type Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"

const projectId = () => Kernel.makeId("prj", `prj_${randomBytes(8).toString("hex")}`)

const token = (node: Database.DatabaseNode["Service"], user: string) =>
  Effect.map(node.verifier(Redacted.make(randomBytes(24).toString("base64url"))), (verifier) => ({ user, verifier }))

/** A fresh project's database, ensured with an owner password, beside the node and the store that keeps its images. */
const ensuredDatabase = Effect.gen(function* () {
  const node = yield* Database.DatabaseNode
  const store = yield* Database.BackupStore
  const project = projectId()
  yield* node.ensure(project, yield* node.verifier(Redacted.make("owner")))
  return { node, store, project }
})

/**
 * The `DatabaseNode` contract (with a `BackupStore` to keep images): every node admin must pass it. Projects are
 * unique per test, so one node may serve the whole file.
 */
export const databaseNodeSuite = <E>(
  name: string,
  node: Layer.Layer<Database.DatabaseNode | Database.BackupStore, E>
): void =>
  layer(node, { timeout: 120_000 })(`${name}: DatabaseNode contract`, (it) => {
    it.effect("ensure creates the database once: a second call answers the same endpoint", () =>
      Effect.gen(function* () {
        const node = yield* Database.DatabaseNode
        const project = projectId()
        assert.isUndefined(yield* node.endpoint(project))
        const verifier = yield* node.verifier(Redacted.make("first-password"))
        const first = yield* node.ensure(project, verifier)
        const again = yield* node.ensure(project, yield* node.verifier(Redacted.make("other-password")))
        assert.deepStrictEqual(again, first)
        assert.deepStrictEqual(yield* node.endpoint(project), first)
        assert.isAbove(first.port, 0)
        // What clients are told: TLS required, or none at all (a node without TLS has no authority to verify with).
        assert.include(["require", "disable"], first.sslmode)
        if (first.sslmode === "disable") assert.isUndefined(node.authority)
      })
    )

    it.effect("tokens are created, listed sorted, replaced and deleted; deleting an absent one is no error", () =>
      Effect.gen(function* () {
        const { node, project } = yield* ensuredDatabase
        assert.deepStrictEqual(yield* node.tokens(project), [])
        yield* node.createToken(project, yield* token(node, "tok_b"))
        yield* node.createToken(project, yield* token(node, "tok_a"))
        yield* node.createToken(project, yield* token(node, "tok_a"))
        assert.deepStrictEqual(yield* node.tokens(project), ["tok_a", "tok_b"])
        yield* node.deleteToken(project, "tok_a")
        yield* node.deleteToken(project, "tok_zz")
        assert.deepStrictEqual(yield* node.tokens(project), ["tok_b"])
        yield* node.syncTokens(project, [yield* token(node, "tok_c")])
        assert.deepStrictEqual(yield* node.tokens(project), ["tok_c"])
      })
    )

    it.effect(
      "a restore brings back the image's state and moves the cluster to the given epoch",
      () =>
        Effect.gen(function* () {
          const { node, store, project } = yield* ensuredDatabase
          yield* node.createToken(project, yield* token(node, "tok_before"))
          const first = yield* node.backup(project, (image) => store.put(`${project}/1-1.tar.gz`, image))
          assert.strictEqual(first.epoch, 1)
          assert.isAbove(first.written.bytes, 0)
          assert.match(first.written.sha256, /^[0-9a-f]{64}$/)
          assert.deepStrictEqual(yield* store.digest(`${project}/1-1.tar.gz`), first.written)
          yield* node.createToken(project, yield* token(node, "tok_after"))
          yield* node.restore(project, store.read(`${project}/1-1.tar.gz`), 3)
          assert.deepStrictEqual(yield* node.tokens(project), ["tok_before"])
          const second = yield* node.backup(project, (image) => store.put(`${project}/3-1.tar.gz`, image))
          assert.strictEqual(second.epoch, 3)
          yield* node.resume(project)
        }),
      // A real node takes two images and a restore.
      180_000
    )

    it.effect(
      "remove lets go of the database: no endpoint, token calls and a late restore are unavailable and bring nothing back",
      () =>
        Effect.gen(function* () {
          const { node, store, project } = yield* ensuredDatabase
          yield* node.backup(project, (image) => store.put(`${project}/1-1.tar.gz`, image))
          assert.include(yield* node.held, project)
          yield* node.remove(project)
          yield* node.remove(project)
          assert.notInclude(yield* node.held, project)
          assert.isUndefined(yield* node.endpoint(project))
          const exit = yield* Effect.exit(node.tokens(project))
          assert.isTrue(Exit.isFailure(exit))
          const error = yield* Effect.flip(node.tokens(project))
          assert.strictEqual(error.reason, "unavailable")
          // A restore that was under way when the database was removed (its project deleted) comes too late.
          const late = yield* Effect.flip(node.restore(project, store.read(`${project}/1-1.tar.gz`), 2))
          assert.strictEqual(late._tag === "DatabaseNodeError" ? late.reason : late._tag, "unavailable")
          assert.isUndefined(yield* node.endpoint(project))
        }),
      // A real node takes an image.
      120_000
    )
  })
