import { Clock, Context, Duration, Effect, Layer, Option, Ref, Schema, Scope } from "effect"
import { makeWakeups } from "../kernel/Wakeups.ts"
import { nowIso } from "../kernel/Time.ts"
import type { JobHandler, JobRow } from "./Job.ts"
import { defaultJobRunnerOptions, iso, jobDriver, type JobRunnerOptions } from "./JobDriver.ts"
import { JobStore, type RunnerRegistration } from "./JobStore.ts"

export { defaultJobRunnerOptions, type JobRunnerOptions } from "./JobDriver.ts"

/** The handlers of every job kind this process runs. */
export class JobHandlers extends Context.Service<JobHandlers, ReadonlyArray<JobHandler>>()(
  "@hostplane/core/jobs/JobHandlers"
) {
  /** Builds each handler with its services; a runner claims only the kinds listed here. */
  static readonly layer = <H extends Effect.Effect<JobHandler | ReadonlyArray<JobHandler>, never, any>>(
    handlers: ReadonlyArray<H>
  ): Layer.Layer<JobHandlers, never, Effect.Services<H>> =>
    Layer.effect(
      JobHandlers,
      Effect.map(
        Effect.forEach(
          handlers,
          (handler): Effect.Effect<JobHandler | ReadonlyArray<JobHandler>, never, Effect.Services<H>> => handler
        ),
        (built) => built.flat()
      )
    )
}

/**
 * Claims due jobs of the kinds it has handlers for and drives each phase by phase. Several runners (processes,
 * replicas) share one store: a job is held by one runner at a time, its lease renewed while a phase runs.
 */
export class JobRunner extends Context.Service<
  JobRunner,
  {
    /** The owner id of this runner's claims. */
    readonly owner: Effect.Effect<string>
    /** Claims up to `limit` due jobs and runs each until it ends or waits; answers how many it claimed. */
    readonly runOnce: (limit?: number) => Effect.Effect<number>
    /**
     * Claims whenever a slot is free and work is due (woken by the store's feed, a job's end or the next due time;
     * every `interval` while the feed is not heard) and runs each job in its own fiber, forever.
     */
    readonly loop: Effect.Effect<never>
  }
>()("@hostplane/core/jobs/JobRunner") {
  static readonly make = (options: Partial<JobRunnerOptions> = {}) =>
    Layer.effect(
      JobRunner,
      Effect.gen(function* () {
        const settings = { ...defaultJobRunnerOptions, ...options }
        const store = yield* JobStore
        const handlers = yield* JobHandlers
        const byKind = new Map(handlers.map((handler) => [handler.definition.kind, handler]))
        const kinds = [...byKind.keys()]
        const scope = yield* Effect.scope
        const registration = yield* Ref.make<RunnerRegistration>(yield* store.register)

        // A runner whose store identity is gone (PostgreSQL: its session ended) takes a new one before claiming.
        const owner = Effect.gen(function* () {
          const current = yield* Ref.get(registration)
          if (yield* current.alive) return current.owner
          yield* Effect.logWarning("job runner lost its registration; registering again", { owner: current.owner })
          const fresh = yield* store.register.pipe(Scope.provide(scope))
          yield* Ref.set(registration, fresh)
          return fresh.owner
        })

        // Periodic kinds: one job of each always exists.
        for (const handler of handlers) {
          const singleton = handler.definition.singleton
          if (singleton === undefined) continue
          const at = yield* nowIso
          yield* store.insert({
            id: `job_${handler.definition.kind}`,
            kind: handler.definition.kind,
            key: handler.definition.kind,
            payload: yield* Schema.encodeEffect(handler.definition.payload)(singleton.payload).pipe(Effect.orDie),
            phase: handler.definition.phases[0],
            runAt: at,
            createdAt: at
          })
        }

        const run = jobDriver(store, settings)
        const runJob = (me: string, row: JobRow, claimedAt: number) => run(me, byKind.get(row.kind)!, row, claimedAt)

        const claim = Effect.fnUntraced(function* (limit: number) {
          if (limit <= 0 || kinds.length === 0) return { me: "", claimedAt: 0, rows: [] as ReadonlyArray<JobRow> }
          const me = yield* owner
          const claimedAt = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
          const rows = yield* store.claim(
            me,
            kinds,
            iso(claimedAt),
            iso(claimedAt + Duration.toMillis(settings.lease)),
            limit
          )
          return { me, claimedAt, rows }
        })

        const runOnce = (limit = settings.concurrency) =>
          Effect.gen(function* () {
            const { me, claimedAt, rows } = yield* claim(limit)
            yield* Effect.forEach(rows, (row) => runJob(me, row, claimedAt), {
              concurrency: settings.concurrency,
              discard: true
            })
            return rows.length
          }).pipe(Effect.withSpan("JobRunner.runOnce"))

        // Claims while slots are free and work is due; idle, it sleeps until new work is heard from the store's feed,
        // a slot frees up, or the next job comes due (at most `heardInterval` away); while the feed is not heard, it
        // claims every `interval` instead. A job of its own ending only has it read the next due time again (a repeat
        // or a retry was rescheduled): one statement, not a claim.
        const loop = Effect.gen(function* () {
          let running = 0
          let claimNow = true
          const wakeups = yield* makeWakeups({
            subscribe: store.watch,
            next: (feed) =>
              Effect.map(feed.next, (heard) => {
                const mine = heard.some((kind) => byKind.has(kind))
                if (mine) claimNow = true
                return mine
              }),
            retry: settings.interval,
            lost: "job runner: the feed of new jobs is lost; polling until it is back"
          })

          // How long a runner that claimed at `claimedAt` sleeps unless woken.
          const idleWait = Effect.fnUntraced(function* (claimedAt: number) {
            if (!wakeups.hearing()) return settings.interval
            const due = yield* store.nextDue(kinds)
            if (Option.isNone(due)) return settings.heardInterval
            const dueAt = Date.parse(due.value)
            // Due at the claim yet not taken: another transaction holds its row for now; look again as a poll would.
            if (dueAt <= claimedAt) return settings.interval
            const now = yield* Clock.currentTimeMillis
            return Duration.millis(Math.min(Duration.toMillis(settings.heardInterval), Math.max(0, dueAt - now)))
          })

          let claimedAt = 0
          for (;;) {
            const free = settings.concurrency - running
            if (claimNow && free > 0) {
              const claimed = yield* claim(free).pipe(
                Effect.catchCause((cause) => Effect.as(Effect.logError("job claim failed", cause), undefined))
              )
              if (claimed === undefined) {
                yield* Effect.sleep(settings.interval)
                continue
              }
              claimedAt = claimed.claimedAt
              for (const row of claimed.rows) {
                running++
                yield* Effect.forkIn(
                  runJob(claimed.me, row, claimed.claimedAt).pipe(
                    Effect.ensuring(
                      Effect.sync(() => {
                        // Every slot was taken: the loop claims again now that one is free.
                        if (running-- >= settings.concurrency) claimNow = true
                        wakeups.wake()
                      })
                    )
                  ),
                  scope
                )
              }
              // Every free slot filled: more may be due.
              if (claimed.rows.length === free) continue
            }
            claimNow = false
            const hearing = wakeups.hearing()
            let woken: boolean
            if (settings.concurrency - running <= 0) {
              // Every slot taken: a job's end wakes the loop.
              yield* wakeups.next
              woken = true
            } else {
              const wait = yield* idleWait(claimedAt).pipe(
                Effect.catchCause((cause) =>
                  Effect.as(Effect.logError("job runner: the next due job cannot be read", cause), settings.interval)
                )
              )
              woken = yield* wakeups.wait(wait, wait)
            }
            // Timed out (something came due), or the feed was just taken or lost.
            if (!woken || wakeups.hearing() !== hearing) claimNow = true
          }
        }).pipe(Effect.scoped)

        return JobRunner.of({ owner, runOnce, loop })
      })
    )

  /** One round of a runner over `handlers` (tests, tools): claims what is due now and runs it to the end. */
  static readonly runOnce = <H extends Effect.Effect<JobHandler | ReadonlyArray<JobHandler>, never, any>>(
    handlers: ReadonlyArray<H>,
    options: Partial<JobRunnerOptions> = {}
  ): Effect.Effect<number, never, JobStore | Effect.Services<H>> =>
    Effect.scoped(
      Effect.flatMap(Layer.build(JobRunner.make(options).pipe(Layer.provide(JobHandlers.layer(handlers)))), (context) =>
        Context.get(context, JobRunner).runOnce()
      )
    )

  /** Runs jobs in the background for the lifetime of the layer. */
  static readonly background = (options: Partial<JobRunnerOptions> = {}) =>
    Layer.effectDiscard(Effect.flatMap(Effect.service(JobRunner), (runner) => Effect.forkScoped(runner.loop))).pipe(
      Layer.provideMerge(JobRunner.make(options))
    )
}
