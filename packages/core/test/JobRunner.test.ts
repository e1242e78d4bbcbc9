import { assert, describe, it } from "@effect/vitest"
import { Jobs, Kernel } from "@hostplane/core"
import { JobStoreMemory, MemoryState } from "@hostplane/testkit"
import { Context, Deferred, Duration, Effect, Fiber, Layer, Option, Schema } from "effect"
import { TestClock } from "effect/testing"

const start = Date.UTC(2030, 0, 1)

const engine = Jobs.Jobs.layer.pipe(
  Layer.provideMerge(JobStoreMemory.layer),
  Layer.provide(Layer.mergeAll(MemoryState.layer, Kernel.Tokens.layer))
)

const withEngine = <A, E>(test: Effect.Effect<A, E, Jobs.Jobs | Jobs.JobStore>) =>
  Effect.andThen(TestClock.setTime(start), test).pipe(Effect.provide(engine))

/** A kind like a database restore: four phases, abortable before `committing`. */
const restore = Jobs.define({
  kind: "test_restore",
  payload: Schema.Struct({ database: Schema.String }),
  phases: ["draining", "sealing", "committing", "reactivation"],
  abortableBefore: "committing",
  maxAttempts: 3
})

/** A handler that records every phase and every hook; `fail(phase)` makes that phase fail as given. */
const recorder = (
  definition: Jobs.JobDefinition<{ readonly database: string }>,
  fail: (phase: string, attempts: number) => Jobs.JobFailure | undefined = () => undefined
) => {
  const calls: Array<string> = []
  const handler = Effect.succeed(
    Jobs.handler(definition, {
      run: (phase, job) =>
        Effect.suspend(() => {
          calls.push(phase)
          const failure = fail(phase, job.attempts)
          return failure === undefined ? Effect.void : Effect.fail(failure)
        }),
      onAbort: (job) => Effect.sync(() => void calls.push(`abort at ${job.phase}`)),
      onFailed: (_job, error) => Effect.sync(() => void calls.push(`failed: ${error}`))
    })
  )
  return { calls, handler }
}

const jobOf = (id: string) =>
  Effect.flatMap(Effect.service(Jobs.JobStore), (store) => store.get(id)).pipe(Effect.map(Option.getOrThrow))

describe("the jobs engine: phases, failures, abort, repeats", () => {
  it.effect("phases run in order; the job ends done at its last phase", () => {
    const { calls, handler } = recorder(restore)
    return withEngine(
      Effect.gen(function* () {
        const id = Option.getOrThrow(yield* (yield* Jobs.Jobs).enqueue(restore, { database: "db1" }))
        assert.strictEqual(yield* Jobs.JobRunner.runOnce([handler]), 1)
        assert.deepStrictEqual(calls, ["draining", "sealing", "committing", "reactivation"])
        const job = yield* jobOf(id)
        assert.deepStrictEqual([job.phase, job.terminalCode, job.attempts], ["reactivation", "done", 1])
        assert.strictEqual(yield* Jobs.JobRunner.runOnce([handler]), 0, "a finished job is never claimed again")
      })
    )
  })

  it.effect(
    "runNow drives one job in the caller's fiber before it is due, and leaves a held or finished job alone",
    () => {
      const { calls, handler } = recorder(restore, (phase, attempts) =>
        phase === "sealing" && attempts === 1 ? new Jobs.JobFailure({ message: "busy", retryable: true }) : undefined
      )
      return withEngine(
        Effect.gen(function* () {
          const jobs = yield* Jobs.Jobs
          const later = new Date(start + 60_000).toISOString()
          const id = Option.getOrThrow(yield* jobs.enqueue(restore, { database: "db1" }, { runAt: later }))
          const other = Option.getOrThrow(yield* jobs.enqueue(restore, { database: "db2" }, { runAt: later }))
          const waiting = Option.getOrThrow(yield* jobs.runNow(yield* handler, id))
          assert.deepStrictEqual([waiting.phase, waiting.terminalCode, waiting.lastError], ["sealing", null, "busy"])
          const done = Option.getOrThrow(yield* jobs.runNow(yield* handler, id))
          assert.deepStrictEqual([done.terminalCode, done.attempts], ["done", 2])
          assert.deepStrictEqual(calls, ["draining", "sealing", "sealing", "committing", "reactivation"])
          assert.strictEqual((yield* jobOf(other)).attempts, 0, "only the job asked for runs")
          assert.isTrue(Option.isNone(yield* jobs.runNow(yield* handler, id)), "a finished job is left alone")
          const store = yield* Jobs.JobStore
          yield* Effect.scoped(
            Effect.gen(function* () {
              const { owner } = yield* store.register
              yield* store.claimJob(owner, other, new Date(start).toISOString(), later)
              assert.isTrue(Option.isNone(yield* jobs.runNow(yield* handler, other)), "held by a live runner")
            })
          )
        })
      )
    }
  )

  it.effect(
    "a failed phase waits for its backoff, then resumes there; after maxAttempts the job fails and onFailed runs",
    () => {
      const { calls, handler } = recorder(restore, (phase) =>
        phase === "sealing" ? new Jobs.JobFailure({ message: "node unreachable", retryable: true }) : undefined
      )
      return withEngine(
        Effect.gen(function* () {
          const id = Option.getOrThrow(yield* (yield* Jobs.Jobs).enqueue(restore, { database: "db1" }))
          yield* Jobs.JobRunner.runOnce([handler])
          let job = yield* jobOf(id)
          assert.deepStrictEqual([job.phase, job.terminalCode, job.lastError], ["sealing", null, "node unreachable"])
          assert.strictEqual(job.runAt, new Date(start + Duration.toMillis(Jobs.defaultBackoff(1))).toISOString())
          assert.strictEqual(yield* Jobs.JobRunner.runOnce([handler]), 0, "not before the backoff")
          yield* TestClock.adjust(Jobs.defaultBackoff(1))
          yield* Jobs.JobRunner.runOnce([handler])
          yield* TestClock.adjust(Jobs.defaultBackoff(2))
          yield* Jobs.JobRunner.runOnce([handler])
          job = yield* jobOf(id)
          assert.deepStrictEqual([job.terminalCode, job.attempts], ["failed", 3])
          assert.deepStrictEqual(calls, ["draining", "sealing", "sealing", "sealing", "failed: node unreachable"])
        })
      )
    }
  )

  it.effect("a failure that retrying cannot help ends the job failed at once", () => {
    const { calls, handler } = recorder(restore, (phase) =>
      phase === "draining" ? new Jobs.JobFailure({ message: "no such database", retryable: false }) : undefined
    )
    return withEngine(
      Effect.gen(function* () {
        const id = Option.getOrThrow(yield* (yield* Jobs.Jobs).enqueue(restore, { database: "db1" }))
        yield* Jobs.JobRunner.runOnce([handler])
        assert.strictEqual((yield* jobOf(id)).terminalCode, "failed")
        assert.deepStrictEqual(calls, ["draining", "failed: no such database"])
      })
    )
  })

  it.effect("abort is accepted before the named phase: onAbort runs, the job ends aborted and never commits", () => {
    const { calls, handler } = recorder(restore, (phase) =>
      phase === "sealing" ? new Jobs.JobFailure({ message: "busy", retryable: true }) : undefined
    )
    return withEngine(
      Effect.gen(function* () {
        const jobs = yield* Jobs.Jobs
        const id = Option.getOrThrow(yield* jobs.enqueue(restore, { database: "db1" }))
        yield* Jobs.JobRunner.runOnce([handler])
        assert.strictEqual((yield* jobOf(id)).phase, "sealing")
        assert.isTrue(yield* jobs.abort(restore, id))
        // Due at once, without waiting for the backoff.
        assert.strictEqual(yield* Jobs.JobRunner.runOnce([handler]), 1)
        const job = yield* jobOf(id)
        assert.deepStrictEqual([job.phase, job.terminalCode], ["sealing", "aborted"])
        assert.deepStrictEqual(calls, ["draining", "sealing", "abort at sealing"])
        assert.isFalse(yield* jobs.abort(restore, id), "a finished job is not abortable")
      })
    )
  })

  it.effect("abort at or after the named phase is refused and changes nothing", () => {
    const { handler } = recorder(restore, (phase) =>
      phase === "committing" ? new Jobs.JobFailure({ message: "busy", retryable: true }) : undefined
    )
    return withEngine(
      Effect.gen(function* () {
        const jobs = yield* Jobs.Jobs
        const id = Option.getOrThrow(yield* jobs.enqueue(restore, { database: "db1" }))
        yield* Jobs.JobRunner.runOnce([handler])
        assert.strictEqual((yield* jobOf(id)).phase, "committing")
        assert.isFalse(yield* jobs.abort(restore, id))
        assert.isFalse((yield* jobOf(id)).abortRequested)
        const other = Jobs.define({ ...restore, kind: "test_other" })
        assert.isFalse(yield* jobs.abort(other, id), "only the job's own kind may abort it")
      })
    )
  })

  it.effect("an abort requested while a phase runs stops the job before its next phase", () =>
    withEngine(
      Effect.gen(function* () {
        const jobs = yield* Jobs.Jobs
        const calls: Array<string> = []
        const inSealing = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const handler = Effect.succeed(
          Jobs.handler(restore, {
            run: (phase) =>
              Effect.gen(function* () {
                calls.push(phase)
                if (phase === "sealing") {
                  yield* Deferred.succeed(inSealing, undefined)
                  yield* Deferred.await(release)
                }
              }),
            onAbort: (job) => Effect.sync(() => void calls.push(`abort at ${job.phase}`))
          })
        )
        const id = Option.getOrThrow(yield* jobs.enqueue(restore, { database: "db1" }))
        const running = yield* Effect.forkChild(Jobs.JobRunner.runOnce([handler]))
        yield* Deferred.await(inSealing)
        assert.isTrue(yield* jobs.abort(restore, id))
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(running)
        assert.deepStrictEqual(calls, ["draining", "sealing", "abort at sealing"])
        assert.strictEqual((yield* jobOf(id)).terminalCode, "aborted")
      })
    )
  )

  it.effect("a repeating kind runs again every interval after its claim until a phase stops it", () =>
    withEngine(
      Effect.gen(function* () {
        let checks = 0
        const check = Jobs.define({
          kind: "test_check",
          payload: Schema.Struct({ until: Schema.Number }),
          phases: ["check"],
          every: Duration.minutes(1)
        })
        const handler = Effect.succeed(
          Jobs.handler(check, {
            run: (_phase, job) => Effect.sync(() => (++checks >= job.payload.until ? Jobs.stop : undefined))
          })
        )
        const id = Option.getOrThrow(yield* (yield* Jobs.Jobs).enqueue(check, { until: 3 }))
        assert.strictEqual(yield* Jobs.JobRunner.runOnce([handler]), 1)
        assert.strictEqual(yield* Jobs.JobRunner.runOnce([handler]), 0, "once per interval")
        assert.strictEqual((yield* jobOf(id)).runAt, new Date(start + 60_000).toISOString())
        yield* TestClock.adjust(Duration.minutes(1))
        yield* Jobs.JobRunner.runOnce([handler])
        yield* TestClock.adjust(Duration.minutes(1))
        yield* Jobs.JobRunner.runOnce([handler])
        assert.strictEqual(checks, 3)
        const job = yield* jobOf(id)
        assert.deepStrictEqual([job.terminalCode, job.attempts], ["done", 1], "every round counts from zero")
        yield* TestClock.adjust(Duration.minutes(5))
        assert.strictEqual(yield* Jobs.JobRunner.runOnce([handler]), 0)
      })
    )
  )

  it.effect("a periodic kind has one job, created by the first runner and shared by every later one", () =>
    withEngine(
      Effect.gen(function* () {
        let purges = 0
        const purge = Jobs.define({
          kind: "test_purge",
          payload: Schema.Struct({}),
          phases: ["purge"],
          every: Duration.hours(1),
          singleton: { payload: {} }
        })
        const handler = Effect.succeed(Jobs.handler(purge, { run: () => Effect.sync(() => void purges++) }))
        assert.strictEqual(yield* Jobs.JobRunner.runOnce([handler]), 1)
        assert.strictEqual(yield* Jobs.JobRunner.runOnce([handler]), 0)
        yield* TestClock.adjust(Duration.hours(1))
        assert.strictEqual(yield* Jobs.JobRunner.runOnce([handler]), 1)
        assert.strictEqual(purges, 2)
        const job = yield* jobOf("job_test_purge")
        assert.deepStrictEqual([job.kind, job.terminalCode], ["test_purge", null])
      })
    )
  )

  it.effect("a runner claims only the kinds it has handlers for", () => {
    const { calls, handler } = recorder(restore)
    return withEngine(
      Effect.gen(function* () {
        const other = Jobs.define({ ...restore, kind: "test_unhandled" })
        const id = Option.getOrThrow(yield* (yield* Jobs.Jobs).enqueue(other, { database: "db1" }))
        assert.strictEqual(yield* Jobs.JobRunner.runOnce([handler]), 0)
        const job = yield* jobOf(id)
        assert.deepStrictEqual([job.attempts, job.leaseOwner], [0, null])
        assert.deepStrictEqual(calls, [])
      })
    )
  })

  it.live("a phase longer than the lease keeps its job: the heartbeat renews the lease while it runs", () =>
    Effect.provide(
      Effect.gen(function* () {
        const store = yield* Jobs.JobStore
        const slow = Jobs.define({ kind: "test_slow", payload: Schema.Struct({}), phases: ["slow"] })
        const handler = Effect.succeed(Jobs.handler(slow, { run: () => Effect.sleep("600 millis") }))
        const id = Option.getOrThrow(yield* (yield* Jobs.Jobs).enqueue(slow, {}))
        const running = yield* Effect.forkChild(
          Jobs.JobRunner.runOnce([handler], { lease: Duration.millis(200), heartbeat: Duration.millis(50) })
        )
        yield* Effect.sleep("400 millis")
        const other = yield* store.register
        const now = new Date().toISOString()
        assert.deepStrictEqual(yield* store.claim(other.owner, ["test_slow"], now, now, 10), [], "still held")
        yield* Fiber.join(running)
        assert.strictEqual((yield* jobOf(id)).terminalCode, "done")
      }).pipe(Effect.scoped),
      engine
    )
  )
})

describe("the runner's loop: wake-ups instead of polls", () => {
  // Polls far apart: a job the loop runs within the test was woken for, not polled for.
  const slow = { interval: Duration.hours(1), heardInterval: Duration.hours(1) }
  const quick = Jobs.define({ kind: "test_quick", payload: Schema.Struct({ n: Schema.Number }), phases: ["run"] })

  /** The memory store, telling when the loop has asked for the next due time and what it was answered. */
  const watched = (onNextDue: (due: Option.Option<string>) => Effect.Effect<void>) =>
    Jobs.Jobs.layer.pipe(
      Layer.provideMerge(
        Layer.effect(
          Jobs.JobStore,
          Effect.map(Effect.service(MemoryState), (state) => {
            const store = JobStoreMemory.make(state)
            return { ...store, nextDue: (kinds: ReadonlyArray<string>) => Effect.tap(store.nextDue(kinds), onNextDue) }
          })
        )
      ),
      Layer.provide(Layer.mergeAll(MemoryState.layer, Kernel.Tokens.layer))
    )

  /** Runs the loop of a runner with `slow` polls over a handler that completes `ran` with each job's `n`. */
  const runLoop = (ran: (n: number) => Effect.Effect<void>) =>
    Effect.gen(function* () {
      const handler = Effect.succeed(Jobs.handler(quick, { run: (_phase, job) => ran(job.payload.n) }))
      const context = yield* Layer.build(
        Jobs.JobRunner.make(slow).pipe(Layer.provide(Jobs.JobHandlers.layer([handler])))
      )
      yield* Effect.forkScoped(Context.get(context, Jobs.JobRunner).loop)
    })

  const within = <A>(effect: Effect.Effect<A>) => TestClock.withLive(Effect.timeoutOption(effect, "10 seconds"))

  it.effect("an idle runner that hears the store takes a new job at once, however far apart its polls", () => {
    return Effect.gen(function* () {
      const idle = yield* Deferred.make<void>()
      const done = yield* Deferred.make<number>()
      yield* Effect.gen(function* () {
        yield* TestClock.setTime(start)
        yield* runLoop((n) => Deferred.succeed(done, n))
        // The loop asks for the next due time only once it hears the feed, and then sleeps.
        yield* Deferred.await(idle)
        yield* (yield* Jobs.Jobs).enqueue(quick, { n: 1 })
        const woken = yield* within(Deferred.await(done))
        assert.deepStrictEqual(woken, Option.some(1), "the insert woke the loop")
      }).pipe(Effect.scoped, Effect.provide(watched(() => Deferred.succeed(idle, undefined))))
    })
  })

  it.effect("an idle runner sleeps until the next job comes due, not until its next poll", () => {
    return Effect.gen(function* () {
      const sawDue = yield* Deferred.make<void>()
      const done = yield* Deferred.make<number>()
      const dueAt = new Date(start + 60_000).toISOString()
      yield* Effect.gen(function* () {
        yield* TestClock.setTime(start)
        yield* runLoop((n) => Deferred.succeed(done, n))
        yield* (yield* Jobs.Jobs).enqueue(quick, { n: 2 }, { runAt: dueAt })
        yield* Deferred.await(sawDue)
        assert.isTrue(Option.isNone(yield* Deferred.poll(done)), "not run before it is due")
        yield* TestClock.adjust(Duration.minutes(1))
        assert.deepStrictEqual(yield* within(Deferred.await(done)), Option.some(2), "run when it came due")
      }).pipe(
        Effect.scoped,
        Effect.provide(
          watched((due) =>
            Option.isSome(due) && due.value === dueAt ? Deferred.succeed(sawDue, undefined) : Effect.void
          )
        )
      )
    })
  })
})
