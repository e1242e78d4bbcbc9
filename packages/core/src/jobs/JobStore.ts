import { Context, type Effect, type Option, Schema, type Scope } from "effect"
import type { JobRow, TerminalCode } from "./Job.ts"

/** A new job as `insert` stores it: unclaimed, no attempts yet. */
export interface NewJob {
  readonly id: string
  readonly kind: string
  readonly key: string | null
  readonly payload: unknown
  readonly phase: string
  readonly runAt: string
  readonly createdAt: string
}

/** A runner's identity for its claims, valid while the scope that registered it is open. */
export interface RunnerRegistration {
  readonly owner: string
  /** False once the store no longer counts this runner alive (PostgreSQL: its session lock is gone). */
  readonly alive: Effect.Effect<boolean>
}

/** What a runner does with a job it holds and stops working on for now. */
export interface Reschedule {
  readonly phase: string
  readonly runAt: string
  readonly error: string | null
  /** A repeating job starts a fresh round: its attempts count from zero again. */
  readonly resetAttempts: boolean
}

/** The feed of new work was lost (a dropped connection): the runner polls until it subscribes again. */
export class JobFeedLost extends Schema.TaggedError<JobFeedLost>()("JobFeedLost", {
  message: Schema.String
}) {}

/** A subscription to work becoming claimable; `next` waits for some, committed since the last `next`. */
export interface JobFeed {
  /** The kinds of the jobs inserted, or made due now, since the last `next` (at least one). */
  readonly next: Effect.Effect<ReadonlyArray<string>, JobFeedLost>
}

/**
 * Durable jobs. A job is worked on only by the runner holding it: its lease ends at `leaseUntil` (renewed by a
 * heartbeat while a phase runs) or at once when the runner is gone, whichever comes first. Every write of a runner
 * names its owner and changes nothing (answers false) once the job has been taken over.
 */
export class JobStore extends Context.Service<
  JobStore,
  {
    /** Inserts the job, inside the ambient transaction if any; false when its id, or its key among unfinished jobs of its kind, is taken. */
    readonly insert: (job: NewJob) => Effect.Effect<boolean>
    readonly get: (id: string) => Effect.Effect<Option.Option<JobRow>>
    /** The unfinished job of `kind` with `key`, if any. */
    readonly findUnfinished: (kind: string, key: string) => Effect.Effect<Option.Option<JobRow>>
    /**
     * At most `limit` unfinished jobs of `kind`'s pinned kinds (`<kind>@<place>`), the oldest first: the work waiting
     * for a place that may be gone for good.
     */
    readonly unfinishedPinned: (kind: string, limit: number) => Effect.Effect<ReadonlyArray<JobRow>>
    /** A new runner identity; closing the scope gives up its claims at once. */
    readonly register: Effect.Effect<RunnerRegistration, never, Scope.Scope>
    /**
     * Claims at most `limit` unfinished jobs of `kinds` due at `now` that nobody holds (no owner, an expired lease or
     * an owner that is gone), the earliest due first (PostgreSQL: `FOR UPDATE SKIP LOCKED`), leasing them to `owner`
     * until `leaseUntil`. Each claim counts an attempt.
     */
    readonly claim: (
      owner: string,
      kinds: ReadonlyArray<string>,
      now: string,
      leaseUntil: string,
      limit: number
    ) => Effect.Effect<ReadonlyArray<JobRow>>
    /**
     * Claims the unfinished job `id` for `owner` as `claim` would, whether it is due yet or not (a caller that needs
     * it done now, such as a resent request), unless another live runner holds it; counts an attempt.
     */
    readonly claimJob: (
      owner: string,
      id: string,
      now: string,
      leaseUntil: string
    ) => Effect.Effect<Option.Option<JobRow>>
    /**
     * Subscribes to work becoming claimable by any process on the store: a job inserted, made due now (an abort) or
     * given back by a closing runner completes `next` once its transaction has committed. Not heard: a job coming due
     * at its `runAt`, and a runner dying (see `nextDue`).
     */
    readonly watch: Effect.Effect<JobFeed, JobFeedLost, Scope.Scope>
    /**
     * When the earliest unfinished job of `kinds` comes free (its `runAt`, or its lease's end if held), if any: a
     * runner that hears the feed sleeps until then instead of polling.
     */
    readonly nextDue: (kinds: ReadonlyArray<string>) => Effect.Effect<Option.Option<string>>
    /** Extends the leases `owner` still holds among `ids`; answers those ids. */
    readonly renew: (
      owner: string,
      ids: ReadonlyArray<string>,
      leaseUntil: string
    ) => Effect.Effect<ReadonlyArray<string>>
    /** Moves a held job to its next phase unless an abort was requested meanwhile. */
    readonly advance: (id: string, owner: string, phase: string, at: string) => Effect.Effect<boolean>
    /** Ends a held job. */
    readonly finish: (
      id: string,
      owner: string,
      code: TerminalCode,
      error: string | null,
      at: string
    ) => Effect.Effect<boolean>
    /** Gives a held job back, due again at `runAt`. */
    readonly reschedule: (id: string, owner: string, next: Reschedule, at: string) => Effect.Effect<boolean>
    /** Asks an unfinished job at one of `phases` to abort and makes it due now; false when it is not at one. */
    readonly requestAbort: (id: string, phases: ReadonlyArray<string>, at: string) => Effect.Effect<boolean>
    /**
     * Removes the finished jobs of `kind` and of its pinned kinds (`<kind>@<place>`) last updated before `before`, and
     * answers how many: kinds whose rows nobody reads once they ended (handed-over node work) would otherwise pile up.
     */
    readonly purgeFinished: (kind: string, before: string) => Effect.Effect<number>
  }
>()("@hostplane/core/jobs/JobStore") {}
