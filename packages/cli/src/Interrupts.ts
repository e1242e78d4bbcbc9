import { Effect } from "effect"

/**
 * Ctrl-C while a command waits on a long operation: the command may take the signal (to ask before aborting the
 * operation) instead of the default, which stops the CLI at once. The bin routes every SIGINT through `interrupted`.
 */
let handler: (() => void) | undefined

/** Called by the bin on SIGINT: true when a command took it. */
export const interrupted = (): boolean => {
  if (handler === undefined) return false
  handler()
  return true
}

/** While `effect` runs, SIGINT calls `onInterrupt` instead of stopping the CLI. */
export const withInterrupts =
  (onInterrupt: () => void) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        const previous = handler
        handler = onInterrupt
        return previous
      }),
      () => effect,
      (previous) => Effect.sync(() => void (handler = previous))
    )
