import { assert, layer } from "@effect/vitest"
import { Kernel } from "@hostplane/core"
import { Deferred, Effect, Fiber, type Layer, Schema } from "effect"
import { TestClock } from "effect/testing"
import { uniqueId } from "../contract/Fixtures.ts"

class Boom extends Schema.TaggedError<Boom>()("Boom", { message: Schema.String }) {}

/** The revision now: where a node that has read everything stands. */
const latest = Effect.gen(function* () {
  const revisions = yield* Kernel.NodeRevisions
  return (yield* revisions.changedAfter(Number.MAX_SAFE_INTEGER, 1)).revision
})

/**
 * The `NodeRevisions` contract: raises inside a transaction commit in revision order, a rolled-back raise leaves no
 * trace, `changedAfter` lists each changed project once with its latest revision, and `watch` wakes a reader once a
 * raise is committed. Revisions are global, so the tests compare them with the revision at their start, never with
 * fixed numbers.
 */
export const nodeRevisionsSuite = <E>(
  name: string,
  store: Layer.Layer<Kernel.NodeRevisions | Kernel.Transactor, E>
): void =>
  layer(store)(`${name}: NodeRevisions contract`, (it) => {
    it.effect("each raise answers a higher revision and stamps its project, listed once with its latest", () =>
      Effect.gen(function* () {
        const revisions = yield* Kernel.NodeRevisions
        const tx = yield* Kernel.Transactor
        const start = yield* latest
        const [a, b] = [uniqueId("prj"), uniqueId("prj")]
        const first = yield* tx.withTransaction(revisions.raise(a))
        const second = yield* tx.withTransaction(revisions.raise(b))
        const third = yield* tx.withTransaction(revisions.raise(a))
        assert.isTrue(start < first && first < second && second < third)
        assert.strictEqual(yield* latest, third)
        assert.deepStrictEqual(yield* revisions.changedAfter(start, 100), {
          revision: third,
          projects: [
            { projectId: b, revision: second },
            { projectId: a, revision: third }
          ]
        })
      })
    )

    it.effect("after is exclusive, and nothing changed after the latest revision answers it with no project", () =>
      Effect.gen(function* () {
        const revisions = yield* Kernel.NodeRevisions
        const tx = yield* Kernel.Transactor
        const project = uniqueId("prj")
        const raised = yield* tx.withTransaction(revisions.raise(project))
        assert.deepStrictEqual(yield* revisions.changedAfter(raised, 100), { revision: raised, projects: [] })
        assert.deepStrictEqual(yield* revisions.changedAfter(raised - 1, 100), {
          revision: raised,
          projects: [{ projectId: project, revision: raised }]
        })
      })
    )

    it.effect("a limited read answers the last listed revision, and reading on from it misses nothing", () =>
      Effect.gen(function* () {
        const revisions = yield* Kernel.NodeRevisions
        const tx = yield* Kernel.Transactor
        const start = yield* latest
        const projects = [uniqueId("prj"), uniqueId("prj"), uniqueId("prj")]
        const raised = yield* Effect.forEach(projects, (project) => tx.withTransaction(revisions.raise(project)))
        const page = yield* revisions.changedAfter(start, 2)
        assert.deepStrictEqual(page, {
          revision: raised[1],
          projects: [
            { projectId: projects[0], revision: raised[0] },
            { projectId: projects[1], revision: raised[1] }
          ]
        })
        assert.deepStrictEqual(yield* revisions.changedAfter(page.revision, 2), {
          revision: raised[2],
          projects: [{ projectId: projects[2], revision: raised[2] }]
        })
      })
    )

    it.effect("a raise in a transaction that fails leaves neither the revision nor the stamp", () =>
      Effect.gen(function* () {
        const revisions = yield* Kernel.NodeRevisions
        const tx = yield* Kernel.Transactor
        const start = yield* latest
        const project = uniqueId("prj")
        yield* Effect.flip(
          tx.withTransaction(Effect.andThen(revisions.raise(project), Effect.fail(new Boom({ message: "no" }))))
        )
        assert.deepStrictEqual(yield* revisions.changedAfter(start, 100), { revision: start, projects: [] })
        const next = yield* tx.withTransaction(revisions.raise(project))
        assert.isTrue(next > start)
      })
    )

    it.effect("a raise waits for a running one to commit, so revisions commit in order and are never seen early", () =>
      Effect.gen(function* () {
        const revisions = yield* Kernel.NodeRevisions
        const tx = yield* Kernel.Transactor
        const start = yield* latest
        const [a, b] = [uniqueId("prj"), uniqueId("prj")]
        const raised = yield* Deferred.make<number>()
        const release = yield* Deferred.make<void>()
        const first = yield* Effect.forkChild(
          tx.withTransaction(
            Effect.gen(function* () {
              yield* Deferred.succeed(raised, yield* revisions.raise(a))
              yield* Deferred.await(release)
            })
          )
        )
        const revisionOfA = yield* Deferred.await(raised)
        const second = yield* Effect.forkChild(tx.withTransaction(revisions.raise(b)))
        yield* TestClock.withLive(Effect.sleep("200 millis"))
        assert.isUndefined(second.pollUnsafe(), "the second raise waits for the first to commit")
        assert.deepStrictEqual(yield* revisions.changedAfter(start, 100), { revision: start, projects: [] })
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(first)
        const revisionOfB = yield* Fiber.join(second)
        assert.isTrue(revisionOfA < revisionOfB)
        assert.deepStrictEqual((yield* revisions.changedAfter(start, 100)).projects, [
          { projectId: a, revision: revisionOfA },
          { projectId: b, revision: revisionOfB }
        ])
      })
    )

    it.effect("a watcher is woken once a raise has committed, so the read it makes then sees the stamp", () =>
      Effect.gen(function* () {
        const revisions = yield* Kernel.NodeRevisions
        const tx = yield* Kernel.Transactor
        const start = yield* latest
        const project = uniqueId("prj")
        const feed = yield* revisions.watch
        const raised = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const writer = yield* Effect.forkChild(
          tx.withTransaction(
            Effect.gen(function* () {
              yield* revisions.raise(project)
              yield* Deferred.succeed(raised, undefined)
              yield* Deferred.await(release)
            })
          )
        )
        yield* Deferred.await(raised)
        // Reads at each wake-up until the stamp shows: a wake-up only before the commit leaves it waiting for good.
        const reader = yield* Effect.forkChild(
          Effect.gen(function* () {
            for (;;) {
              yield* feed.next
              const changes = yield* revisions.changedAfter(start, 100)
              if (changes.projects.some((stamp) => stamp.projectId === project)) return
            }
          })
        )
        yield* TestClock.withLive(Effect.sleep("100 millis"))
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(writer)
        const woken = yield* TestClock.withLive(Effect.timeoutOption(Fiber.join(reader), "10 seconds"))
        assert.isTrue(woken._tag === "Some", "the committed raise woke the watcher")
      }).pipe(Effect.scoped)
    )

    it.effect("concurrent raises answer distinct revisions", () =>
      Effect.gen(function* () {
        const revisions = yield* Kernel.NodeRevisions
        const tx = yield* Kernel.Transactor
        const start = yield* latest
        const projects = Array.from({ length: 8 }, () => uniqueId("prj"))
        const raised = yield* Effect.forEach(projects, (project) => tx.withTransaction(revisions.raise(project)), {
          concurrency: "unbounded"
        })
        assert.strictEqual(new Set(raised).size, projects.length)
        const listed = (yield* revisions.changedAfter(start, 100)).projects
        assert.deepStrictEqual(
          listed.map((stamp) => stamp.revision),
          [...raised].sort((x, y) => x - y)
        )
      })
    )
  })
