import { Context, type Effect, type Option } from "effect"

/** The answer to the first request of a key, replayed to its retries. */
export interface StoredResponse {
  readonly status: number
  /** Lower-case names; per-request headers (request id, date, length) are not kept. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
}

/** One `Idempotency-Key` of one user. */
export interface IdempotencyRecord {
  readonly userId: string
  readonly key: string
  readonly method: string
  /** The request target (path and query) of the first request. */
  readonly path: string
  /** Who runs the first request now; a running row whose lease lapsed is taken over with a new claim id. */
  readonly claimId: string
  /** Until when the running attempt counts as alive (renewed while it runs). */
  readonly leaseUntil: string
  /** Hex SHA-256 of the first request's body; null while it runs. */
  readonly bodySha256: string | null
  /** Null while the first request runs. */
  readonly response: StoredResponse | null
  readonly createdAt: string
  readonly expiresAt: string
}

export interface ClaimInput {
  readonly userId: string
  readonly key: string
  readonly method: string
  readonly path: string
  readonly claimId: string
  readonly now: string
  readonly leaseUntil: string
  readonly expiresAt: string
}

/** Idempotency keys, unique per user and key; rows past `expiresAt` count as absent and are purged on the way. */
export class IdempotencyStore extends Context.Service<
  IdempotencyStore,
  {
    /**
     * Records a running attempt for the key unless a live row holds it: none when claimed, else that row. An expired
     * row, or a running one whose lease lapsed (its server died), is replaced. Deletes a batch of expired rows.
     */
    readonly claim: (input: ClaimInput) => Effect.Effect<Option.Option<IdempotencyRecord>>
    /** Extends the lease of a running attempt that still holds its claim. */
    readonly renew: (userId: string, key: string, claimId: string, leaseUntil: string) => Effect.Effect<void>
    /** Stores the outcome of the attempt holding `claimId`; no effect once the claim was taken over. */
    readonly complete: (
      userId: string,
      key: string,
      claimId: string,
      outcome: { readonly bodySha256: string; readonly response: StoredResponse }
    ) => Effect.Effect<void>
    /** Forgets a running attempt that keeps nothing (a retry runs afresh); no effect once completed or taken over. */
    readonly release: (userId: string, key: string, claimId: string) => Effect.Effect<void>
  }
>()("@hostplane/core/idempotency/IdempotencyStore") {}
