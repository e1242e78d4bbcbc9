import { type Duration, Effect, Layer, Schedule } from "effect"

/**
 * A layer that runs `cycle` every `interval` for as long as it lives. A failed cycle is logged, never fatal: the
 * durable rows it works on are claimed again on the next cycle.
 */
export const runEvery = <E, R>(name: string, interval: Duration.Duration, cycle: Effect.Effect<unknown, E, R>) =>
  Layer.effectDiscard(
    cycle.pipe(
      Effect.catchCause((cause) => Effect.logError(`${name} failed`, cause)),
      Effect.repeat(Schedule.spaced(interval)),
      Effect.forkScoped
    )
  )
