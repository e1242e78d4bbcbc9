import { Cause, Duration, Effect, Exit, Metric, Option, Schema } from "effect"
import { isoAfter, nowIso } from "../kernel/Time.ts"
import { defaultBackoff, defaultMaxAttempts, type Job, JobFailure, type JobHandler, type JobRow, stop } from "./Job.ts"
import type { JobStore } from "./JobStore.ts"

export interface JobRunnerOptions {
  /** How often an idle runner looks for due jobs while it does not hear the store's feed (`JobStore.watch`). */
  readonly interval: Duration.Duration
  /**
   * The longest an idle runner sleeps while it hears the feed: it sleeps until the next job comes due, or new work is
   * heard, but looks at least this often for what no notification tells (a dead runner's jobs, a feed that died
   * unnoticed).
   */
  readonly heardInterval: Duration.Duration
  /** How long a claim holds a job without a heartbeat; a dead process's jobs are free sooner (see the README). */
  readonly lease: Duration.Duration
  /** How often a running job's lease is renewed. */
  readonly heartbeat: Duration.Duration
  /** Jobs one runner works on at once. */
  readonly concurrency: number
}

export const defaultJobRunnerOptions: JobRunnerOptions = {
  interval: Duration.seconds(1),
  heardInterval: Duration.seconds(5),
  lease: Duration.seconds(20),
  heartbeat: Duration.seconds(5),
  concurrency: 8
}

export const iso = (ms: number) => new Date(ms).toISOString()

const jobRuns = Metric.counter("hostplane_jobs_total", {
  description:
    "Job claims run to their end by this process, by kind and outcome (done, failed, aborted, retry: to run again " +
    "after a failed phase, taken_over: another runner holds it, lease_lost, error: the runner itself failed)",
  incremental: true
})
const jobSeconds = Metric.histogram("hostplane_job_run_duration_seconds", {
  description: "Time one claim of a job ran, by kind",
  boundaries: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300]
})

const errorText = (cause: Cause.Cause<JobFailure>): string =>
  Option.match(Cause.findErrorOption(cause), {
    onSome: (failure) => failure.message,
    onNone: () => Cause.pretty(cause)
  })

/**
 * Drives a job its runner `me` has claimed, phase by phase, with its lease renewed by a heartbeat: until it ends
 * (done, failed, aborted), waits (a failed phase is due again after its backoff) or is taken over. The one driver of
 * the runner's loop and of `Jobs.runNow`.
 */
export const jobDriver = (store: JobStore["Service"], settings: JobRunnerOptions) => {
  const drive = Effect.fnUntraced(function* (me: string, handler: JobHandler, row: JobRow, claimedAt: number) {
    const definition = handler.definition
    const phases = definition.phases
    const payload = yield* Schema.decodeUnknownEffect(definition.payload)(row.payload).pipe(Effect.option)
    const index = phases.indexOf(row.phase)
    if (Option.isNone(payload) || index < 0) {
      const error = Option.isNone(payload) ? "the payload does not decode" : `unknown phase ${row.phase}`
      yield* Effect.logError("job cannot run", { jobId: row.id, kind: row.kind, error })
      yield* store.finish(row.id, me, "failed", error, yield* nowIso)
      return "failed"
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
      return "aborted"
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
        yield* store.reschedule(
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
        return "retry"
      }
      if (final || row.attempts >= (definition.maxAttempts ?? defaultMaxAttempts)) {
        if (yield* store.finish(row.id, me, "failed", error, at)) {
          if (handler.onFailed !== undefined) yield* handler.onFailed(jobAt(phase), error)
        }
        return "failed"
      }
      const delay = (definition.backoff ?? defaultBackoff)(row.attempts)
      yield* store.reschedule(row.id, me, { phase, runAt: yield* isoAfter(delay), error, resetAttempts: false }, at)
      return "retry"
    })

    if (row.abortRequested) return yield* abort(row.phase)
    for (let at = index; ;) {
      const phase = phases[at]!
      const exit = yield* Effect.exit(handler.run(phase, jobAt(phase)))
      if (Exit.isFailure(exit)) return yield* failed(phase, exit.cause)
      at++
      if (exit.value === stop || at >= phases.length) {
        if (exit.value !== stop && definition.every !== undefined) {
          yield* store.reschedule(
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
          return "done"
        }
        yield* store.finish(row.id, me, "done", null, yield* nowIso)
        return "done"
      }
      if (!(yield* store.advance(row.id, me, phases[at]!, yield* nowIso))) {
        const now = yield* store.get(row.id)
        if (Option.isSome(now) && now.value.leaseOwner === me && now.value.abortRequested) {
          return yield* abort(now.value.phase)
        }
        yield* Effect.logWarning("job taken over by another runner", { jobId: row.id })
        return "taken_over"
      }
    }
  })

  // The heartbeat renews the lease while the job runs; if the lease is lost, the job's fiber stops.
  const heartbeat = (me: string, id: string) =>
    Effect.gen(function* () {
      for (;;) {
        yield* Effect.sleep(settings.heartbeat)
        const held = yield* store.renew(me, [id], yield* isoAfter(settings.lease))
        if (held.length === 0) {
          yield* Effect.logWarning("job lease lost; stopping it", { jobId: id })
          return "lease_lost" as const
        }
      }
    })

  return (me: string, handler: JobHandler, row: JobRow, claimedAt: number): Effect.Effect<void> =>
    Effect.raceFirst(drive(me, handler, row, claimedAt), heartbeat(me, row.id)).pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.failCause(cause)
          : Effect.as(Effect.logError("job runner failed", { jobId: row.id, cause }), "error" as const)
      ),
      Effect.timed,
      Effect.flatMap(([elapsed, outcome]) =>
        Effect.andThen(
          Metric.update(Metric.withAttributes(jobRuns, { kind: row.kind, outcome }), 1),
          Metric.update(Metric.withAttributes(jobSeconds, { kind: row.kind }), Duration.toSeconds(elapsed))
        )
      ),
      Effect.withSpan("JobRunner.run", { attributes: { jobId: row.id, kind: row.kind } })
    )
}
