import { Context, Duration, Effect, Layer, Option, Schema } from "effect"
import { nowIso } from "../kernel/Time.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { abortablePhases, type JobDefinition, type JobHandler, type JobRow, type TerminalCode } from "./Job.ts"
import { defaultJobRunnerOptions, iso, jobDriver } from "./JobDriver.ts"
import { JobStore } from "./JobStore.ts"

export interface EnqueueOptions {
  /** The job's id (an operation's `op_...`, a mail's `mail_...`); a random `job_...` when left out. */
  readonly id?: string
  readonly key?: string
  /** When it is first due; now when left out. */
  readonly runAt?: string
}

/** Starts jobs and reads them; `enqueue` joins the caller's transaction, so a job exists only if its write commits. */
export class Jobs extends Context.Service<
  Jobs,
  {
    /** Answers the job's id, or none when the id or the key is taken by another job. */
    readonly enqueue: <P>(
      definition: JobDefinition<P>,
      payload: P,
      options?: EnqueueOptions
    ) => Effect.Effect<Option.Option<string>>
    readonly get: (id: string) => Effect.Effect<Option.Option<JobRow>>
    readonly findUnfinished: <P>(definition: JobDefinition<P>, key: string) => Effect.Effect<Option.Option<JobRow>>
    /**
     * Requests the abort of an unfinished job of `definition` at a phase before its `abortableBefore`; the runner then
     * undoes it and ends it `aborted`. False when the job is not there or not abortable (at or past that phase).
     */
    readonly abort: <P>(definition: JobDefinition<P>, id: string) => Effect.Effect<boolean>
    /**
     * Runs the unfinished job `id` in this fiber now, as a runner would (lease, heartbeat, phases, backoff), until it
     * ends or waits; none when another live runner holds it or it has finished. A request that must answer with the
     * job's outcome (a domain purchase) drives it this way, and a runner takes it over if this process dies.
     */
    readonly runNow: <P>(handler: JobHandler<P>, id: string) => Effect.Effect<Option.Option<JobRow>>
    /** At most `limit` unfinished jobs of `definition`'s pinned kinds (`<kind>@<place>`), the oldest first. */
    readonly unfinishedPinned: <P>(definition: JobDefinition<P>, limit: number) => Effect.Effect<ReadonlyArray<JobRow>>
    /**
     * Ends the unfinished job `id` from outside its handler, for a job whose place is gone for good (a lost replica's
     * pinned work): claims it as `runNow` would, runs `end` on the row while holding it, and ends the job with the code
     * and error `end` answers. None when a live runner holds it or it has finished; a failure of `end` gives it back.
     */
    readonly takeOver: <E, R>(
      id: string,
      end: (row: JobRow) => Effect.Effect<{ readonly code: TerminalCode; readonly error: string | null }, E, R>
    ) => Effect.Effect<Option.Option<TerminalCode>, E, R>
    /** Removes the jobs of `definition` (and of its pinned kinds) that ended more than `age` ago; answers how many. */
    readonly purgeFinished: <P>(definition: JobDefinition<P>, age: Duration.Duration) => Effect.Effect<number>
  }
>()("@hostplane/core/jobs/Jobs") {
  static readonly layer = Layer.effect(
    Jobs,
    Effect.gen(function* () {
      const store = yield* JobStore
      const tokens = yield* Tokens
      const drive = jobDriver(store, defaultJobRunnerOptions)
      return Jobs.of({
        enqueue: Effect.fn("Jobs.enqueue")(function* <P>(
          definition: JobDefinition<P>,
          payload: P,
          options: EnqueueOptions = {}
        ) {
          const at = yield* nowIso
          const id = options.id ?? (yield* tokens.id("job"))
          const inserted = yield* store.insert({
            id,
            kind: definition.kind,
            key: options.key ?? null,
            payload: yield* Schema.encodeEffect(definition.payload)(payload).pipe(Effect.orDie),
            phase: definition.phases[0],
            runAt: options.runAt ?? at,
            createdAt: at
          })
          return inserted ? Option.some(id) : Option.none()
        }),
        get: store.get,
        findUnfinished: (definition, key) => store.findUnfinished(definition.kind, key),
        abort: Effect.fn("Jobs.abort")(function* <P>(definition: JobDefinition<P>, id: string) {
          const row = yield* store.get(id)
          if (Option.isNone(row) || row.value.kind !== definition.kind) return false
          return yield* store.requestAbort(id, abortablePhases(definition), yield* nowIso)
        }),
        runNow: Effect.fn("Jobs.runNow")(function* <P>(handler: JobHandler<P>, id: string) {
          return yield* Effect.scoped(
            Effect.gen(function* () {
              const { owner } = yield* store.register
              const claimedAt = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
              const lease = Duration.toMillis(defaultJobRunnerOptions.lease)
              const row = yield* store.claimJob(owner, id, iso(claimedAt), iso(claimedAt + lease))
              if (Option.isNone(row) || row.value.kind !== handler.definition.kind) return Option.none<JobRow>()
              yield* drive(owner, handler, row.value, claimedAt)
              return yield* store.get(id)
            })
          )
        }),
        unfinishedPinned: (definition, limit) => store.unfinishedPinned(definition.kind, limit),
        takeOver: <E, R>(
          id: string,
          end: (row: JobRow) => Effect.Effect<{ readonly code: TerminalCode; readonly error: string | null }, E, R>
        ) =>
          Effect.scoped(
            Effect.gen(function* () {
              const { owner } = yield* store.register
              const claimedAt = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
              const lease = Duration.toMillis(defaultJobRunnerOptions.lease)
              const row = yield* store.claimJob(owner, id, iso(claimedAt), iso(claimedAt + lease))
              if (Option.isNone(row)) return Option.none<TerminalCode>()
              const { code, error } = yield* end(row.value)
              const ended = yield* store.finish(id, owner, code, error, yield* nowIso)
              return ended ? Option.some(code) : Option.none<TerminalCode>()
            })
          ).pipe(Effect.withSpan("Jobs.takeOver", { attributes: { id } })),
        purgeFinished: (definition, age) =>
          Effect.flatMap(
            Effect.clockWith((clock) => clock.currentTimeMillis),
            (now) => store.purgeFinished(definition.kind, iso(now - Duration.toMillis(age)))
          )
      })
    })
  )
}
