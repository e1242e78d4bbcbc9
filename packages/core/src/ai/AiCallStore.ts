import { Context, type Effect, type Option } from "effect"
import type { OrgId, ProjectId } from "../kernel/Ids.ts"

/** A gateway call as recorded before the upstream is asked: the durable record its charge settles once. */
export interface AiCallStart {
  readonly id: string
  readonly orgId: OrgId
  readonly projectId: ProjectId
  readonly projectName: string
  /** The catalog id (the ledger row's `model`). */
  readonly model: string
  readonly at: string
  /** Calls of the project started after this instant count against `perMinute`. */
  readonly windowStart: string
  /** The plan's requests per minute; 0 counts nothing. */
  readonly perMinute: number
  /** The gateway process that owns the call (a job-runner identity: the store knows whether it is alive). */
  readonly owner: string
  /** Until when the call counts as running without a renewal, even when its owner looks alive. */
  readonly leaseUntil: string
  /** The request's input tokens as estimated before the call: what a call orphaned by a crash is charged for. */
  readonly inputEstimate: number
}

/** A pending call whose owner is gone or whose lease ran out: what the sweeper charges it. */
export interface AiCallOrphan {
  readonly id: string
  readonly orgId: OrgId
  readonly model: string
  readonly inputEstimate: number
  /** Output characters streamed before the owner stopped renewing (0 for a JSON answer). */
  readonly outputChars: number
}

/** What a call used, from the upstream's `usage`, and its cost at the catalog price. */
export interface AiCallCharge {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly costMicroCents: number
  readonly at: string
}

/**
 * The gateway's calls (decisions.md part 6): each is recorded `pending` before the upstream call and settled once, in
 * the same statement as its `call` ledger row and the balance, so a charge is never doubled; counting the recent
 * ones is the per-minute limit, shared by every replica on the database.
 */
export class AiCallStore extends Context.Service<
  AiCallStore,
  {
    /**
     * Records the call unless the project started `perMinute` calls since `windowStart`; false then. Serialised per
     * project, so concurrent starts never pass the limit.
     */
    readonly start: (call: AiCallStart) => Effect.Effect<boolean>
    /** Forgets a call refused or failed before any usage: nothing is charged. */
    readonly abandon: (callId: string) => Effect.Effect<void>
    /**
     * Settles a pending call: one `call` ledger row of `-costMicroCents` and the balance moved, atomically. Answers
     * the org's new balance, or none when the call was already settled (or abandoned).
     */
    readonly charge: (callId: string, charge: AiCallCharge) => Effect.Effect<Option.Option<number>>
    /** Extends a pending call's lease and records its output so far; false once it is no longer pending. */
    readonly renew: (callId: string, leaseUntil: string, outputChars: number) => Effect.Effect<boolean>
    /**
     * Pending calls, oldest first, whose owner is no longer alive (PostgreSQL: its session lock is gone) or whose
     * lease ended before `now`: calls a process died (or froze) in the middle of.
     */
    readonly orphans: (now: string, limit: number) => Effect.Effect<ReadonlyArray<AiCallOrphan>>
  }
>()("@hostplane/core/ai/AiCallStore") {}
