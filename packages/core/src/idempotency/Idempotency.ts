import { Context, Duration, Effect, Layer, Option, Schedule } from "effect"
import { IdempotencyKeyInUse } from "../errors/Errors.ts"
import { isoAfter, nowIso } from "../kernel/Time.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { type IdempotencyRecord, IdempotencyStore, type StoredResponse } from "./IdempotencyStore.ts"

/** An `Idempotency-Key` value: an opaque string of 1 to 255 visible ASCII characters (as Stripe allows). */
export const keyPattern = /^[\x21-\x7e]{1,255}$/

/** The attempt that runs a keyed request, holding the key. */
export interface Claim {
  readonly userId: string
  readonly key: string
  readonly claimId: string
}

/** This attempt runs the request; or the first attempt finished and its answer is to be replayed. */
export type Begin =
  { readonly _tag: "Run"; readonly claim: Claim } | { readonly _tag: "Done"; readonly record: IdempotencyRecord }

export interface IdempotencyOptions {
  /** How long a key is remembered after its first request. Default 24 hours. */
  readonly keyLifetime?: Duration.Duration
  /** How long a running attempt counts as alive without renewal; renewed at a third of it. Default 30 seconds. */
  readonly lease?: Duration.Duration
  /** How long a retry waits for a running first attempt before 409 `idempotency_key_in_use`. Default 10 minutes. */
  readonly maxWait?: Duration.Duration
}

/**
 * `Idempotency-Key` bookkeeping: the first request of a user's key runs and its answer is kept for 24 hours; a
 * concurrent retry waits until it finished. A running attempt whose process died is taken over once its lease lapses.
 */
export class Idempotency extends Context.Service<
  Idempotency,
  {
    /** Claims the key, or waits while another attempt runs it and answers its finished record. */
    readonly begin: (
      userId: string,
      key: string,
      target: { readonly method: string; readonly path: string }
    ) => Effect.Effect<Begin, IdempotencyKeyInUse>
    /** Runs `effect` (the request) while renewing the claim's lease. */
    readonly holding: <A, E, R>(claim: Claim, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
    /** Keeps the answer for the retries. */
    readonly complete: (
      claim: Claim,
      outcome: { readonly bodySha256: string; readonly response: StoredResponse }
    ) => Effect.Effect<void>
    /** Keeps nothing: the next request with the key runs afresh. */
    readonly release: (claim: Claim) => Effect.Effect<void>
  }
>()("@hostplane/core/idempotency/Idempotency") {
  static readonly layerWith = (options: IdempotencyOptions = {}) =>
    Layer.effect(
      Idempotency,
      Effect.gen(function* () {
        const store = yield* IdempotencyStore
        const tokens = yield* Tokens
        const keyLifetime = options.keyLifetime ?? Duration.hours(24)
        const lease = options.lease ?? Duration.seconds(30)
        const maxWait = options.maxWait ?? Duration.minutes(10)
        // A waiting retry looks again soon at first, then every second.
        const poll = Schedule.min([Schedule.exponential(Duration.millis(25), 2), Schedule.spaced(Duration.seconds(1))])

        const attempt = Effect.fnUntraced(function* (
          userId: string,
          key: string,
          target: { readonly method: string; readonly path: string },
          claimId: string
        ) {
          const now = yield* nowIso
          const existing = yield* store.claim({
            userId,
            key,
            method: target.method,
            path: target.path,
            claimId,
            now,
            leaseUntil: yield* isoAfter(lease),
            expiresAt: yield* isoAfter(keyLifetime)
          })
          return existing
        })

        const begin = Effect.fn("Idempotency.begin")(function* (
          userId: string,
          key: string,
          target: { readonly method: string; readonly path: string }
        ) {
          const claimId = yield* tokens.id("idk")
          const settled = attempt(userId, key, target, claimId).pipe(
            Effect.flatMap((existing) =>
              Option.isNone(existing)
                ? Effect.succeed<Begin>({ _tag: "Run", claim: { userId, key, claimId } })
                : existing.value.response === null
                  ? Effect.fail("running" as const)
                  : Effect.succeed<Begin>({ _tag: "Done", record: existing.value })
            ),
            Effect.retry({ schedule: poll }),
            Effect.timeoutOption(maxWait),
            // The poll never gives up by itself: only the time limit ends the wait.
            Effect.catch(() => Effect.succeedNone)
          )
          const outcome = yield* settled
          if (Option.isSome(outcome)) return outcome.value
          return yield* new IdempotencyKeyInUse({
            message: "an earlier request with this Idempotency-Key is still running; retry later"
          })
        })

        const renewal = (claim: Claim) =>
          Effect.flatMap(isoAfter(lease), (until) => store.renew(claim.userId, claim.key, claim.claimId, until)).pipe(
            Effect.repeat(Schedule.spaced(Duration.divideUnsafe(lease, 3)))
          )

        const holding = <A, E, R>(claim: Claim, effect: Effect.Effect<A, E, R>) =>
          Effect.scoped(
            Effect.andThen(Effect.forkScoped(Effect.delay(renewal(claim), Duration.divideUnsafe(lease, 3))), effect)
          )

        return Idempotency.of({
          begin,
          holding,
          complete: (claim, outcome) => store.complete(claim.userId, claim.key, claim.claimId, outcome),
          release: (claim) => store.release(claim.userId, claim.key, claim.claimId)
        })
      })
    )

  static readonly layer = Idempotency.layerWith()
}
