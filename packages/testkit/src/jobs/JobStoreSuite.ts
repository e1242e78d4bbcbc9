import { assert, layer } from "@effect/vitest"
import { Jobs } from "@hostplane/core"
import { Effect, Exit, type Layer, Option, Scope } from "effect"
import { TestClock } from "effect/testing"
import { day, iso, minute, randomSuffix } from "../contract/Fixtures.ts"

interface Window {
  /** An instant `offsetMs` into this test's private stretch of time. */
  readonly t: (offsetMs: number) => string
  /** This test's own kind: claims of other tests and of runners on a shared database never take its jobs. */
  readonly kind: string
  /** Inserts a job of `kind` created (and due) at `t(offsetMs)`. */
  readonly insert: (
    offsetMs: number,
    options?: { readonly key?: string; readonly phase?: string }
  ) => Effect.Effect<Jobs.NewJob>
  /** A registered runner, live until the test ends. */
  readonly runner: Effect.Effect<string, never, Scope.Scope>
  /** Claims this test's jobs. */
  readonly claim: (
    owner: string,
    now: number,
    leaseUntil: number,
    limit?: number
  ) => Effect.Effect<ReadonlyArray<Jobs.JobRow>>
}

const inWindow = <A, E, R>(test: (window: Window) => Effect.Effect<A, E, R>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const store = yield* Jobs.JobStore
      const base = Date.UTC(1800, 0, 1) + Math.floor(Math.random() * 160 * 365) * day
      const t = (offsetMs: number) => iso(base + offsetMs)
      const kind = `test_${randomSuffix()}`
      const window: Window = {
        t,
        kind,
        insert: (offsetMs, options = {}) =>
          Effect.gen(function* () {
            const job: Jobs.NewJob = {
              id: `job_${randomSuffix()}`,
              kind,
              key: options.key ?? null,
              payload: { n: offsetMs, tags: ["a"] },
              phase: options.phase ?? "first",
              runAt: t(offsetMs),
              createdAt: t(offsetMs)
            }
            assert.isTrue(yield* store.insert(job))
            return job
          }),
        runner: Effect.map(store.register, (registration) => registration.owner),
        claim: (owner, now, leaseUntil, limit = 1000) => store.claim(owner, [kind], t(now), t(leaseUntil), limit)
      }
      return yield* test(window)
    })
  )

const ids = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((row) => row.id)

/**
 * The `JobStore` contract: every adapter must pass it. Each test claims only its own kind, so a database may be
 * shared with other tests and runners.
 */
export const jobStoreSuite = <E>(name: string, store: Layer.Layer<Jobs.JobStore, E>): void =>
  layer(store)(`${name}: JobStore contract`, (it) => {
    it.effect("insert stores an unclaimed job at its first phase, due at runAt, with no attempts", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const jobs = yield* Jobs.JobStore
          const job = yield* w.insert(0)
          const expected: Jobs.JobRow = {
            ...job,
            terminalCode: null,
            attempts: 0,
            leaseOwner: null,
            leaseUntil: null,
            abortRequested: false,
            lastError: null,
            updatedAt: w.t(0)
          }
          assert.deepStrictEqual(yield* jobs.get(job.id), Option.some(expected))
          assert.isTrue(Option.isNone(yield* jobs.get(`job_${randomSuffix()}`)))
        })
      )
    )

    it.effect("insert answers false for a taken id, and for a key an unfinished job of the kind holds", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const jobs = yield* Jobs.JobStore
          const key = `key-${randomSuffix()}`
          const first = yield* w.insert(0, { key })
          assert.isFalse(yield* jobs.insert({ ...first, key: null }))
          assert.isFalse(yield* jobs.insert({ ...first, id: `job_${randomSuffix()}` }))
          assert.deepStrictEqual(
            Option.map(yield* jobs.findUnfinished(w.kind, key), (row) => row.id),
            Option.some(first.id)
          )
          const owner = yield* w.runner
          yield* w.claim(owner, 0, minute)
          assert.isTrue(yield* jobs.finish(first.id, owner, "done", null, w.t(1)))
          assert.isTrue(Option.isNone(yield* jobs.findUnfinished(w.kind, key)))
          assert.isTrue(yield* jobs.insert({ ...first, id: `job_${randomSuffix()}` }), "a finished job frees its key")
        })
      )
    )

    it.effect("claim takes due jobs, leases them to the owner until leaseUntil and counts an attempt", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const jobs = yield* Jobs.JobStore
          const owner = yield* w.runner
          const job = yield* w.insert(0)
          const claimed = yield* w.claim(owner, 10_000, 10_000 + 2 * minute)
          const expected: Jobs.JobRow = {
            ...job,
            terminalCode: null,
            attempts: 1,
            leaseOwner: owner,
            leaseUntil: w.t(10_000 + 2 * minute),
            abortRequested: false,
            lastError: null,
            updatedAt: w.t(0)
          }
          assert.deepStrictEqual(claimed, [expected])
          assert.deepStrictEqual(yield* jobs.get(job.id), Option.some(expected))
        })
      )
    )

    it.effect("a job is due when runAt <= now, not before; claim takes only the kinds it is given", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const jobs = yield* Jobs.JobStore
          const owner = yield* w.runner
          const job = yield* w.insert(minute)
          assert.deepStrictEqual(yield* w.claim(owner, minute - 1, 3 * minute), [])
          assert.deepStrictEqual(yield* jobs.claim(owner, [`other_${randomSuffix()}`], w.t(day), w.t(day), 10), [])
          assert.deepStrictEqual(ids(yield* w.claim(owner, minute, 3 * minute)), [job.id])
        })
      )
    )

    it.effect("a claimed job is not claimed again until its lease ends", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const first = yield* w.runner
          const second = yield* w.runner
          const job = yield* w.insert(0)
          assert.deepStrictEqual(ids(yield* w.claim(first, 1_000, 2 * minute)), [job.id])
          assert.deepStrictEqual(yield* w.claim(second, minute, 3 * minute), [])
          assert.deepStrictEqual(yield* w.claim(second, 2 * minute - 1, 3 * minute), [])
          const again = yield* w.claim(second, 2 * minute, 4 * minute)
          assert.deepStrictEqual(ids(again), [job.id])
          assert.strictEqual(again[0]?.attempts, 2)
          assert.strictEqual(again[0]?.leaseOwner, second)
        })
      )
    )

    it.effect("a job held by a runner that is gone is claimed at once, before its lease ends", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const jobs = yield* Jobs.JobStore
          const scope = yield* Scope.make()
          const gone = (yield* jobs.register.pipe(Scope.provide(scope))).owner
          const other = yield* w.runner
          const job = yield* w.insert(0)
          assert.deepStrictEqual(ids(yield* w.claim(gone, 0, day)), [job.id])
          assert.deepStrictEqual(yield* w.claim(other, minute, day), [])
          yield* Scope.close(scope, Exit.void)
          assert.deepStrictEqual(ids(yield* w.claim(other, minute, day)), [job.id])
          assert.isFalse(
            yield* jobs.advance(job.id, gone, "second", w.t(minute)),
            "the old owner's writes change nothing"
          )
          assert.isFalse(yield* jobs.finish(job.id, gone, "done", null, w.t(minute)))
        })
      )
    )

    it.effect("watch tells a job's kind once it comes free: inserted, made due sooner by an abort, or given back", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const jobs = yield* Jobs.JobStore
          const feed = yield* jobs.watch
          // Other tests' and runners' work on a shared database is told too: takes until this test's kind shows.
          const hears = (what: string) =>
            Effect.gen(function* () {
              const heard = yield* TestClock.withLive(
                Effect.timeoutOption(
                  Effect.repeat(feed.next, { until: (kinds) => kinds.includes(w.kind) }),
                  "10 seconds"
                )
              )
              assert.isTrue(Option.isSome(heard), `told of ${what}`)
            })
          const job = yield* w.insert(day, { phase: "first" })
          yield* hears("an insert, even of a job due later")
          assert.isTrue(yield* jobs.requestAbort(job.id, ["first"], w.t(0)))
          yield* hears("an abort that made the job due now")
          const scope = yield* Scope.make()
          const owner = (yield* jobs.register.pipe(Scope.provide(scope))).owner
          assert.deepStrictEqual(ids(yield* w.claim(owner, 0, day)), [job.id])
          yield* Scope.close(scope, Exit.void)
          yield* hears("a closing runner giving its job back")
        })
      )
    )

    it.effect(
      "nextDue answers when the earliest unfinished job of the kinds comes free: its runAt, or its lease's end",
      () =>
        inWindow((w) =>
          Effect.gen(function* () {
            const jobs = yield* Jobs.JobStore
            const next = jobs.nextDue([w.kind])
            assert.isTrue(Option.isNone(yield* next), "none without jobs")
            const first = yield* w.insert(2 * minute)
            const second = yield* w.insert(5 * minute)
            assert.deepStrictEqual(yield* next, Option.some(w.t(2 * minute)))
            assert.isTrue(Option.isNone(yield* jobs.nextDue([`${w.kind}x`])), "only the kinds asked for")
            const owner = yield* w.runner
            assert.deepStrictEqual(ids(yield* w.claim(owner, 3 * minute, 10 * minute, 1)), [first.id])
            assert.deepStrictEqual(yield* next, Option.some(w.t(5 * minute)), "a held job counts at its lease's end")
            assert.deepStrictEqual(ids(yield* w.claim(owner, 6 * minute, 8 * minute, 1)), [second.id])
            assert.deepStrictEqual(yield* next, Option.some(w.t(8 * minute)))
            assert.isTrue(yield* jobs.finish(second.id, owner, "done", null, w.t(7 * minute)))
            assert.deepStrictEqual(yield* next, Option.some(w.t(10 * minute)))
            assert.isTrue(
              yield* jobs.reschedule(
                first.id,
                owner,
                { phase: "first", runAt: w.t(day), error: null, resetAttempts: false },
                w.t(7 * minute)
              )
            )
            assert.deepStrictEqual(yield* next, Option.some(w.t(day)), "a job given back counts at its runAt")
            assert.isTrue(Option.isNone(yield* jobs.nextDue([])))
          })
        )
    )

    it.effect("claimJob takes one job by id before it is due, never one held by a live runner or finished", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const jobs = yield* Jobs.JobStore
          const first = yield* w.runner
          const second = yield* w.runner
          const job = yield* w.insert(day)
          const other = yield* w.insert(0)
          const claimed = yield* jobs.claimJob(first, job.id, w.t(0), w.t(minute))
          assert.strictEqual(Option.getOrThrow(claimed).leaseOwner, first)
          assert.strictEqual(Option.getOrThrow(claimed).attempts, 1)
          assert.isTrue(Option.isNone(yield* jobs.claimJob(second, job.id, w.t(1_000), w.t(minute))))
          assert.deepStrictEqual(ids(yield* w.claim(second, 1_000, minute)), [other.id], "only the one asked for")
          const again = yield* jobs.claimJob(second, job.id, w.t(minute), w.t(2 * minute))
          assert.strictEqual(Option.getOrThrow(again).leaseOwner, second, "once its lease ends")
          assert.isTrue(yield* jobs.finish(job.id, second, "done", null, w.t(minute)))
          assert.isTrue(Option.isNone(yield* jobs.claimJob(first, job.id, w.t(day), w.t(2 * day))))
          assert.isTrue(Option.isNone(yield* jobs.claimJob(first, "job_missing", w.t(0), w.t(minute))))
        })
      )
    )

    it.effect("claim takes at most limit jobs, the earliest due first", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const owner = yield* w.runner
          const second = yield* w.insert(1_000)
          const third = yield* w.insert(2_000)
          const first = yield* w.insert(0)
          assert.deepStrictEqual(ids(yield* w.claim(owner, 3_000, 3_000 + minute, 2)), [first.id, second.id])
          assert.deepStrictEqual(ids(yield* w.claim(owner, 3_000, 3_000 + minute, 2)), [third.id])
          assert.deepStrictEqual(yield* w.claim(owner, 3_000, 3_000 + minute, 2), [])
        })
      )
    )

    it.effect("concurrent claims never hand out the same job", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const owner = yield* w.runner
          const jobs = yield* Effect.forEach(
            Array.from({ length: 12 }, (_, i) => i),
            (i) => w.insert(i)
          )
          const batches = yield* Effect.all(
            Array.from({ length: 4 }, () => w.claim(owner, minute, 10 * minute, 5)),
            { concurrency: "unbounded" }
          )
          const claimed = batches.flatMap(ids)
          assert.strictEqual(new Set(claimed).size, claimed.length)
          assert.deepStrictEqual([...claimed].sort(), ids(jobs).sort())
        })
      )
    )

    it.effect("renew extends the leases the owner still holds and answers those", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const jobs = yield* Jobs.JobStore
          const owner = yield* w.runner
          const other = yield* w.runner
          const held = yield* w.insert(0)
          const lost = yield* w.insert(1)
          yield* w.claim(owner, 0, minute)
          assert.deepStrictEqual(ids(yield* w.claim(other, minute, 2 * minute)), [held.id, lost.id])
          assert.deepStrictEqual(yield* jobs.renew(other, [lost.id], w.t(5 * minute)), [lost.id])
          assert.deepStrictEqual(yield* jobs.renew(owner, [held.id, lost.id], w.t(5 * minute)), [])
          assert.strictEqual(Option.getOrThrow(yield* jobs.get(lost.id)).leaseUntil, w.t(5 * minute))
          assert.deepStrictEqual(ids(yield* w.claim(owner, 4 * minute, day)), [held.id])
        })
      )
    )

    it.effect("advance moves a held job to its next phase, unless an abort was requested", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const jobs = yield* Jobs.JobStore
          const owner = yield* w.runner
          const job = yield* w.insert(0)
          yield* w.claim(owner, 0, minute)
          assert.isTrue(yield* jobs.advance(job.id, owner, "second", w.t(1_000)))
          const row = Option.getOrThrow(yield* jobs.get(job.id))
          assert.strictEqual(row.phase, "second")
          assert.strictEqual(row.updatedAt, w.t(1_000))
          assert.isTrue(yield* jobs.requestAbort(job.id, ["first", "second"], w.t(2_000)))
          assert.isFalse(yield* jobs.advance(job.id, owner, "third", w.t(3_000)))
          const aborting = Option.getOrThrow(yield* jobs.get(job.id))
          assert.strictEqual(aborting.phase, "second")
          assert.isTrue(aborting.abortRequested)
          assert.isTrue(yield* jobs.finish(job.id, owner, "aborted", null, w.t(4_000)))
          assert.strictEqual(Option.getOrThrow(yield* jobs.get(job.id)).terminalCode, "aborted")
        })
      )
    )

    it.effect("requestAbort is refused at a phase not listed, and makes an accepted job due now", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const jobs = yield* Jobs.JobStore
          const late = yield* w.insert(0, { phase: "committing" })
          assert.isFalse(yield* jobs.requestAbort(late.id, ["draining", "sealing"], w.t(1)))
          assert.isFalse(Option.getOrThrow(yield* jobs.get(late.id)).abortRequested)
          const early = yield* w.insert(day, { phase: "draining" })
          assert.isTrue(yield* jobs.requestAbort(early.id, ["draining", "sealing"], w.t(minute)))
          const row = Option.getOrThrow(yield* jobs.get(early.id))
          assert.isTrue(row.abortRequested)
          assert.strictEqual(row.runAt, w.t(minute))
          assert.isFalse(yield* jobs.requestAbort(`job_${randomSuffix()}`, ["draining"], w.t(1)))
        })
      )
    )

    it.effect("finish ends a held job with its code and error; it is never claimed again", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const jobs = yield* Jobs.JobStore
          const owner = yield* w.runner
          const job = yield* w.insert(0)
          yield* w.claim(owner, 0, minute)
          assert.isTrue(yield* jobs.finish(job.id, owner, "failed", "550 no such user", w.t(5_000)))
          const row = Option.getOrThrow(yield* jobs.get(job.id))
          assert.strictEqual(row.terminalCode, "failed")
          assert.strictEqual(row.lastError, "550 no such user")
          assert.strictEqual(row.updatedAt, w.t(5_000))
          assert.strictEqual(row.attempts, 1)
          assert.isNull(row.leaseOwner)
          assert.deepStrictEqual(yield* w.claim(owner, day, day + minute), [])
          assert.isFalse(yield* jobs.finish(job.id, owner, "done", null, w.t(6_000)), "a finished job stays finished")
        })
      )
    )

    it.effect("reschedule gives a held job back, due at runAt at the given phase, with lastError", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const jobs = yield* Jobs.JobStore
          const owner = yield* w.runner
          const job = yield* w.insert(0)
          yield* w.claim(owner, 0, minute)
          const next = { phase: "second", runAt: w.t(5 * minute), error: "421 try later", resetAttempts: false }
          assert.isTrue(yield* jobs.reschedule(job.id, owner, next, w.t(1_000)))
          const row = Option.getOrThrow(yield* jobs.get(job.id))
          assert.deepStrictEqual(
            [row.phase, row.runAt, row.lastError, row.attempts, row.leaseOwner, row.terminalCode],
            ["second", w.t(5 * minute), "421 try later", 1, null, null]
          )
          assert.deepStrictEqual(yield* w.claim(owner, 5 * minute - 1, 6 * minute), [])
          const retried = yield* w.claim(owner, 5 * minute, 7 * minute)
          assert.deepStrictEqual(ids(retried), [job.id])
          assert.strictEqual(retried[0]?.attempts, 2)
          const round = { phase: "first", runAt: w.t(day), error: null, resetAttempts: true }
          assert.isTrue(yield* jobs.reschedule(job.id, owner, round, w.t(6 * minute)))
          assert.strictEqual(Option.getOrThrow(yield* jobs.get(job.id)).attempts, 0, "a new round counts from zero")
        })
      )
    )

    it.effect(
      "unfinishedPinned lists the unfinished jobs of the kind's pinned kinds, oldest first, up to a limit",
      () =>
        inWindow((w) =>
          Effect.gen(function* () {
            const jobs = yield* Jobs.JobStore
            const owner = yield* w.runner
            const base = yield* w.insert(0)
            const pinnedAt = (offsetMs: number, place: string): Jobs.NewJob => ({
              ...base,
              id: `job_${randomSuffix()}`,
              kind: `${w.kind}@${place}`,
              runAt: w.t(offsetMs),
              createdAt: w.t(offsetMs)
            })
            const later = pinnedAt(3_000, "node_2")
            const first = pinnedAt(1_000, "node_1")
            const ended = pinnedAt(2_000, "node_1")
            const otherKind: Jobs.NewJob = { ...pinnedAt(500, "node_1"), kind: `${w.kind}x@node_1` }
            for (const job of [later, first, ended, otherKind]) assert.isTrue(yield* jobs.insert(job))
            yield* jobs.claim(owner, [ended.kind], w.t(2_000), w.t(minute), 10)
            assert.isTrue(yield* jobs.finish(ended.id, owner, "failed", "gone", w.t(2_500)))
            assert.deepStrictEqual(
              ids(yield* jobs.unfinishedPinned(w.kind, 10)),
              [first.id, later.id],
              "neither the kind unpinned, nor another kind sharing its prefix, nor a finished job"
            )
            assert.deepStrictEqual(ids(yield* jobs.unfinishedPinned(w.kind, 1)), [first.id])
            assert.deepStrictEqual(yield* jobs.unfinishedPinned(w.kind, 0), [])
          })
        )
    )

    it.effect("purgeFinished removes the kind's and its pinned kinds' jobs finished before the cutoff, no others", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const jobs = yield* Jobs.JobStore
          const owner = yield* w.runner
          const early = yield* w.insert(0)
          const late = yield* w.insert(1)
          const running = yield* w.insert(2)
          const pinnedJob: Jobs.NewJob = { ...early, id: `job_${randomSuffix()}`, kind: `${w.kind}@node_1` }
          const otherKind: Jobs.NewJob = { ...early, id: `job_${randomSuffix()}`, kind: `${w.kind}x` }
          assert.isTrue(yield* jobs.insert(pinnedJob))
          assert.isTrue(yield* jobs.insert(otherKind))
          assert.strictEqual((yield* w.claim(owner, 10, minute)).length, 3)
          yield* jobs.claim(owner, [pinnedJob.kind, otherKind.kind], w.t(10), w.t(minute), 10)
          assert.isTrue(yield* jobs.finish(early.id, owner, "done", null, w.t(5_000)))
          assert.isTrue(yield* jobs.finish(late.id, owner, "failed", "no", w.t(2 * day)))
          assert.isTrue(yield* jobs.finish(pinnedJob.id, owner, "done", null, w.t(5_000)))
          assert.isTrue(yield* jobs.finish(otherKind.id, owner, "done", null, w.t(5_000)))
          assert.strictEqual(yield* jobs.purgeFinished(w.kind, w.t(day)), 2)
          const present = (id: string) => Effect.map(jobs.get(id), Option.isSome)
          assert.deepStrictEqual(
            [
              yield* present(early.id),
              yield* present(pinnedJob.id),
              yield* present(late.id),
              yield* present(running.id),
              yield* present(otherKind.id)
            ],
            [false, false, true, true, true],
            "only finished jobs of the kind (pinned or not) from before the cutoff go"
          )
          assert.strictEqual(yield* jobs.purgeFinished(w.kind, w.t(day)), 0)
        })
      )
    )
  })
