import type { Logs } from "@hostplane/core"
import { type Context, Effect, Fiber } from "effect"

/** How often the held events are looked at. */
export const tickMs = 200
/** At most this many events go in one write. */
export const maxBatch = 500
/** Up to this many events held at a tick (a node recording up to about 250 a second) are written at that tick. */
export const quietBatch = 50
/** Longer than this no event is held for more to join it. */
export const holdMs = 1_000
/** A node that falls far behind drops its oldest unwritten events rather than its memory. */
const maxHeld = 50_000

/**
 * How many of the held events a tick writes: all of them when few are held (a quiet node's followers see an event at
 * the next tick) or the oldest has waited `holdMs`, a full batch as soon as one is held, else none: a busy node writes
 * fewer, larger batches, since a write costs about as much per statement as for its events.
 */
export const dueAt = (held: number, waitedMs: number): number =>
  held >= maxBatch ? maxBatch : held > 0 && (held <= quietBatch || waitedMs >= holdMs) ? held : 0

export interface EventBatches {
  /** The collector's sink: events join the held ones, and a full batch is written at once. */
  readonly add: (events: ReadonlyArray<Logs.LogEventInput>) => void
  /** Writes what is due (`dueAt`); the invoker calls it every `tickMs`. */
  readonly tick: () => void
  /** Writes everything held, in order, after the write in flight: the node is stopping, and no tick writes again. */
  readonly drain: Effect.Effect<void>
}

/**
 * The invoker's invocation events on their way to the store: held and written in batches by `dueAt`, one write at a
 * time (the next starts when the last one ends), so a busy node costs the control database one statement per batch,
 * not one per request or per write's round trip.
 */
export const makeEventBatches = (
  write: (batch: ReadonlyArray<Logs.LogEventInput>) => Effect.Effect<unknown>,
  context: Context.Context<never>,
  now: () => number = Date.now
): EventBatches => {
  let held: Array<Logs.LogEventInput> = []
  /** When the oldest held event came (an event left over from a write counts from that write's start). */
  let since = 0
  let writing = false
  /** The write in flight, while it is (a store may finish one before `runForkWith` returns). */
  let inFlight: Fiber.Fiber<unknown> | undefined
  let stopping = false

  const take = (count: number): ReadonlyArray<Logs.LogEventInput> => {
    const batch = count === held.length ? held : held.slice(0, count)
    held = count === held.length ? [] : held.slice(count)
    since = now()
    return batch
  }

  const writeDue = (count: number) => {
    if (stopping || writing || count === 0) return
    writing = true
    const fiber = Effect.runForkWith(context)(
      write(take(count)).pipe(
        Effect.ensuring(
          Effect.sync(() => {
            writing = false
            inFlight = undefined
            // Only a full batch follows at once; a partial one waits for a tick, so writes do not chain back to back.
            if (held.length >= maxBatch) writeDue(maxBatch)
          })
        )
      )
    )
    if (writing) inFlight = fiber
  }

  const add = (events: ReadonlyArray<Logs.LogEventInput>) => {
    if (events.length === 0) return
    if (held.length === 0) since = now()
    held.push(...events)
    if (held.length > maxHeld) held.splice(0, held.length - maxHeld)
    if (held.length >= maxBatch) writeDue(maxBatch)
  }

  const tick = () => writeDue(dueAt(held.length, now() - since))

  const drain = Effect.gen(function* () {
    stopping = true
    if (inFlight !== undefined) yield* Fiber.await(inFlight)
    while (held.length > 0) yield* write(take(Math.min(maxBatch, held.length)))
  })

  return { add, tick, drain }
}
