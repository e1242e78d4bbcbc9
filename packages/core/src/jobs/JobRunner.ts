import { Cause, Context, Duration, Effect, Exit, Layer, Option, Ref, Schema, Scope } from "effect"
import { isoAfter, nowIso } from "../kernel/Time.ts"
import { defaultBackoff, defaultMaxAttempts, type Job, JobFailure, type JobHandler, type JobRow, stop } from "./Job.ts"
import { JobStore, type RunnerRegistration } from "./JobStore.ts"

/** The handlers of every job kind this process runs. */
export class JobHandlers extends Context.Service<JobHandlers, ReadonlyArray<JobHandler>>()(
  "@hostplane/core/jobs/JobHandlers"
) {
  /** Builds each handler with its services; a runner claims only the kinds listed here. */
  static readonly layer = <H extends Effect.Effect<JobHandler, never, any>>(
    handlers: ReadonlyArray<H>
  ): Layer.Layer<JobHandlers, never, Effect.Services<H>> =>
    Layer.effect(
      JobHandlers,
      Effect.forEach(handlers, (handler): Effect.Effect<JobHandler, never, Effect.Services<H>> => handler)
    )
}

export interface JobRunnerOptions {
  /** How often an idle runner looks for due jobs. */
  readonly interval: Duration.Duration
  /** How long a claim holds a job without a heartbeat; a dead process's jobs are free sooner (see the README). */
  readonly lease: Duration.Duration
  /** How often a running job's lease is renewed. */
  readonly heartbeat: Duration.Duration
  /** Jobs one runner works on at once. */
  readonly concurrency: number
}

export const defaultJobRunnerOptions: JobRunnerOptions = {
  interval: Duration.seconds(1),
  lease: Duration.seconds(20),
  heartbeat: Duration.seconds(5),
  concurrency: 8
}

const iso = (ms: number) => new Date(ms).toISOString()

const errorText = (cause: Cause.Cause<JobFailure>): string =>
  Option.match(Cause.findErrorOption(cause), {
    onSome: (failure) => failure.message,
    onNone: () => Cause.pretty(cause)
  })

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
    /** Claims whenever a slot is free (every `interval` when idle) and runs each job in its own fiber, forever. */
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

        const drive = Effect.fnUntraced(function* (me: string, row: JobRow, claimedAt: number) {
          const handler = byKind.get(row.kind)!
          const definition = handler.definition
          const phases = definition.phases
          const payload = yield* Schema.decodeUnknownEffect(definition.payload)(row.payload).pipe(Effect.option)
          const index = phases.indexOf(row.phase)
          if (Option.isNone(payload) || index < 0) {
            const error = Option.isNone(payload) ? "the payload does not decode" : `unknown phase ${row.phase}`
            yield* Effect.logError("job cannot run", { jobId: row.id, kind: row.kind, error })
            return yield* store.finish(row.id, me, "failed", error, yield* nowIso)
          }
          const jobAt = (phase: string): Job<unknown> => ({
            id: row.id,
            kind: row.kind,
            key: row.key,
            payload: payload.value,
            phase,
            attempts: row.attempts,
            createdAt: row.createdAt
          })

          // `phase` is the last phase the job reached: `onAbort` undoes what it and the ones before it did.
          const abort = Effect.fnUntraced(function* (phase: string) {
            if (handler.onAbort !== undefined) yield* handler.onAbort(jobAt(phase))
            yield* store.finish(row.id, me, "aborted", null, yield* nowIso)
          })

          const failed = Effect.fnUntraced(function* (phase: string, cause: Cause.Cause<JobFailure>) {
            const error = errorText(cause)
            const at = yield* nowIso
            const final = Option.match(Cause.findErrorOption(cause), {
              onSome: (failure) => !failure.retryable,
              onNone: () => false
            })
            yield* Effect.logWarning("job phase failed", { jobId: row.id, kind: row.kind, phase, error })
            if (definition.every !== undefined && !final) {
              // A repeating job tries again in its next round.
              return yield* store.reschedule(
                row.id,
                me,
                {
                  phase: phases[0],
                  runAt: iso(claimedAt + Duration.toMillis(definition.every)),
                  error,
                  resetAttempts: true
                },
                at
              )
            }
            if (final || row.attempts >= (definition.maxAttempts ?? defaultMaxAttempts)) {
              if (yield* store.finish(row.id, me, "failed", error, at)) {
                if (handler.onFailed !== undefined) yield* handler.onFailed(jobAt(phase), error)
              }
              return
            }
            const delay = (definition.backoff ?? defaultBackoff)(row.attempts)
            yield* store.reschedule(
              row.id,
              me,
              { phase, runAt: yield* isoAfter(delay), error, resetAttempts: false },
              at
            )
          })

          if (row.abortRequested) return yield* abort(row.phase)
          for (let at = index; ;) {
            const phase = phases[at]!
            const exit = yield* Effect.exit(handler.run(phase, jobAt(phase)))
            if (Exit.isFailure(exit)) return yield* failed(phase, exit.cause)
            at++
            if (exit.value === stop || at >= phases.length) {
              if (exit.value !== stop && definition.every !== undefined) {
                return yield* store.reschedule(
                  row.id,
                  me,
                  {
                    phase: phases[0],
                    runAt: iso(claimedAt + Duration.toMillis(definition.every)),
                    error: null,
                    resetAttempts: true
                  },
                  yield* nowIso
                )
              }
              return yield* store.finish(row.id, me, "done", null, yield* nowIso)
            }
            if (!(yield* store.advance(row.id, me, phases[at]!, yield* nowIso))) {
              const now = yield* store.get(row.id)
              if (Option.isSome(now) && now.value.leaseOwner === me && now.value.abortRequested) {
                return yield* abort(now.value.phase)
              }
              return yield* Effect.logWarning("job taken over by another runner", { jobId: row.id })
            }
          }
        })

        // The heartbeat renews the lease while the job runs; if the lease is lost, the job's fiber stops.
        const heartbeat = (me: string, id: string) =>
          Effect.gen(function* () {
            for (;;) {
              yield* Effect.sleep(settings.heartbeat)
              const held = yield* store.renew(me, [id], yield* isoAfter(settings.lease))
              if (held.length === 0) return yield* Effect.logWarning("job lease lost; stopping it", { jobId: id })
            }
          })

        const runJob = (me: string, row: JobRow, claimedAt: number) =>
          Effect.raceFirst(drive(me, row, claimedAt), heartbeat(me, row.id)).pipe(
            Effect.asVoid,
            Effect.catchCause((cause) =>
              Cause.hasInterruptsOnly(cause)
                ? Effect.failCause(cause)
                : Effect.logError("job runner failed", { jobId: row.id, cause })
            ),
            Effect.withSpan("JobRunner.run", { attributes: { jobId: row.id, kind: row.kind } })
          )

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

        const loop = Effect.gen(function* () {
          const running = yield* Ref.make(0)
          for (;;) {
            const free = settings.concurrency - (yield* Ref.get(running))
            const { me, claimedAt, rows } = yield* claim(free).pipe(
              Effect.catchCause((cause) =>
                Effect.as(Effect.logError("job claim failed", cause), { me: "", claimedAt: 0, rows: [] })
              )
            )
            for (const row of rows) {
              yield* Ref.update(running, (n) => n + 1)
              yield* Effect.forkIn(
                runJob(me, row, claimedAt).pipe(Effect.ensuring(Ref.update(running, (n) => n - 1))),
                scope
              )
            }
            if (rows.length === 0 || rows.length < free) yield* Effect.sleep(settings.interval)
          }
        })

        return JobRunner.of({ owner, runOnce, loop })
      })
    )

  /** One round of a runner over `handlers` (tests, tools): claims what is due now and runs it to the end. */
  static readonly runOnce = <H extends Effect.Effect<JobHandler, never, any>>(
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
