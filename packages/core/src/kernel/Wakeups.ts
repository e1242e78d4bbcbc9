import { Cause, type Duration, Effect, Exit, Option, Queue, Schedule, type Scope } from "effect"

/** Wake-ups for a loop that reads a store when told of a change, and polls only while it is not told. */
export interface Wakeups {
  /** Waits for the next wake-up, however long. */
  readonly next: Effect.Effect<void>
  /**
   * Waits for a wake-up, or at most `heard` while the feed is heard and `unheard` while it is not; true when woken.
   */
  readonly wait: (heard: Duration.Input, unheard: Duration.Input) => Effect.Effect<boolean>
  /** Whether the feed is heard now. */
  readonly hearing: () => boolean
  /** Wakes the loop from inside the process. */
  readonly wake: () => void
}

/**
 * Follows a store's feed of changes for the life of the scope: a wake-up at each change `next` answers true for, and
 * when the feed is taken or lost (a change meanwhile was not heard). A lost feed is logged as `lost` says and
 * subscribed to again every `retry`.
 */
export const makeWakeups = <F, E>(options: {
  readonly subscribe: Effect.Effect<F, E, Scope.Scope>
  readonly next: (feed: F) => Effect.Effect<boolean, E>
  readonly retry: Duration.Input
  readonly lost: string
}): Effect.Effect<Wakeups, never, Scope.Scope> =>
  Effect.gen(function* () {
    const queue = yield* Queue.sliding<void>(1)
    const wake = () => void Queue.offerUnsafe(queue, undefined)
    let hearing = false
    const follow = Effect.scoped(
      Effect.gen(function* () {
        const feed = yield* options.subscribe
        hearing = true
        wake()
        for (;;) if (yield* options.next(feed)) wake()
      })
    ).pipe(
      Effect.onExit((exit) =>
        Effect.suspend(() => {
          if (!hearing) return Effect.void
          hearing = false
          wake()
          return Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)
            ? Effect.logWarning(options.lost)
            : Effect.void
        })
      ),
      Effect.retry(Schedule.spaced(options.retry))
    )
    yield* Effect.forkScoped(follow)
    return {
      next: Queue.take(queue),
      wait: (heard, unheard) =>
        Effect.suspend(() =>
          Effect.map(Effect.timeoutOption(Queue.take(queue), hearing ? heard : unheard), Option.isSome)
        ),
      hearing: () => hearing,
      wake
    }
  })
