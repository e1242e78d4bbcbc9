import { Clock, Context, Duration, Effect, Layer } from "effect"
import { type OperationRow, OperationStore } from "./Operation.ts"
import { runEvery } from "../kernel/Background.ts"

/** How one kind of operation is carried out: ordered phases, each step idempotent so a crash can repeat it. */
export interface OperationHandler {
  readonly kind: string
  readonly phases: ReadonlyArray<string>
  readonly run: (phase: string, operation: OperationRow) => Effect.Effect<void>
}

/** The handlers of every operation kind; areas register theirs beside their service layers. */
export const OperationHandlers = Context.Reference<ReadonlyArray<OperationHandler>>(
  "@hostplane/core/operations/OperationHandlers",
  { defaultValue: () => [] }
)

export interface OperationRunnerOptions {
  readonly interval: Duration.Duration
  readonly lease: Duration.Duration
  readonly batch: number
  readonly maxAttempts: number
}

export const defaultOperationRunnerOptions: OperationRunnerOptions = {
  interval: Duration.seconds(1),
  lease: Duration.minutes(5),
  batch: 10,
  maxAttempts: 20
}

const iso = (ms: number) => new Date(ms).toISOString()

/** Drives durable operations phase by phase; several runners (replicas) may share one store. */
export class OperationRunner extends Context.Service<OperationRunner, { readonly runOnce: Effect.Effect<number> }>()(
  "@hostplane/core/operations/OperationRunner"
) {
  static readonly make = (options: OperationRunnerOptions = defaultOperationRunnerOptions) =>
    Layer.effect(
      OperationRunner,
      Effect.gen(function* () {
        const store = yield* OperationStore
        const handlers = yield* OperationHandlers
        const byKind = new Map(handlers.map((handler) => [handler.kind, handler]))

        const work = Effect.fnUntraced(function* (operation: OperationRow) {
          const handler = byKind.get(operation.kind)
          if (handler === undefined) {
            return yield* store.finish(operation.id, "failed", iso(yield* Clock.currentTimeMillis))
          }
          let index = Math.max(handler.phases.indexOf(operation.phase), 0)
          while (index < handler.phases.length) {
            const phase = handler.phases[index]!
            yield* handler.run(phase, operation)
            index++
            const at = iso(yield* Clock.currentTimeMillis)
            if (index < handler.phases.length) yield* store.advance(operation.id, handler.phases[index]!, at)
            else yield* store.finish(operation.id, "done", at)
          }
        })

        const runOnce = Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const claimed = yield* store.claim(iso(now), iso(now + Duration.toMillis(options.lease)), options.batch)
          yield* Effect.forEach(
            claimed,
            (operation) =>
              work(operation).pipe(
                Effect.catchCause((cause) =>
                  Effect.gen(function* () {
                    const at = yield* Clock.currentTimeMillis
                    yield* Effect.logWarning("operation step failed", { operationId: operation.id, cause })
                    if (operation.attempts >= options.maxAttempts) {
                      return yield* store.finish(operation.id, "failed", iso(at))
                    }
                    const delay = Math.min(1_000 * 2 ** operation.attempts, 300_000)
                    yield* store.retryLater(operation.id, String(cause), iso(at + delay), iso(at))
                  })
                )
              ),
            { concurrency: 2, discard: true }
          )
          return claimed.length
        }).pipe(Effect.withSpan("OperationRunner.runOnce"))

        return OperationRunner.of({ runOnce })
      })
    )

  /** Runs the runner in the background for the lifetime of the layer. */
  static readonly background = (options: OperationRunnerOptions = defaultOperationRunnerOptions) =>
    runEvery(
      "operation runner",
      options.interval,
      Effect.flatMap(Effect.service(OperationRunner), (runner) => runner.runOnce)
    ).pipe(Layer.provideMerge(OperationRunner.make(options)))
}
