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
  }
>()("@hostplane/core/ai/AiCallStore") {}
