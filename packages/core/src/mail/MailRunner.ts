import { Clock, Context, Duration, Effect, Layer, Option } from "effect"
import { MailOutbox, MailTransport } from "./Mail.ts"
import { runEvery } from "../kernel/Background.ts"

export interface MailRunnerOptions {
  /** How often the runner looks for due mail. */
  readonly interval: Duration.Duration
  /** How long a claimed row stays hidden from other runners while it is being sent. */
  readonly lease: Duration.Duration
  readonly batch: number
  /** Attempts before a message ends as `failed`. */
  readonly maxAttempts: number
}

export const defaultMailRunnerOptions: MailRunnerOptions = {
  interval: Duration.seconds(1),
  lease: Duration.minutes(2),
  batch: 20,
  maxAttempts: 8
}

/** Delay before attempt `attempts + 1`: 10 s doubling, at most one hour. */
export const backoff = (attempts: number): Duration.Duration =>
  Duration.millis(Math.min(10_000 * 2 ** Math.max(attempts - 1, 0), 3_600_000))

const iso = (ms: number) => new Date(ms).toISOString()

/** Sends queued mail through the transport; several runners (processes, replicas) may share one outbox. */
export class MailRunner extends Context.Service<
  MailRunner,
  {
    /** Claims and sends one batch; answers how many rows it handled. */
    readonly runOnce: Effect.Effect<number>
  }
>()("@hostplane/core/mail/MailRunner") {
  static readonly make = (options: MailRunnerOptions = defaultMailRunnerOptions) =>
    Layer.effect(
      MailRunner,
      Effect.gen(function* () {
        const outbox = yield* MailOutbox
        const transport = yield* MailTransport
        const runOnce = Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const rows = yield* outbox.claim(iso(now), iso(now + Duration.toMillis(options.lease)), options.batch)
          yield* Effect.forEach(
            rows,
            (row) =>
              transport.send(row).pipe(
                Effect.flatMap(() => Effect.flatMap(Clock.currentTimeMillis, (at) => outbox.markSent(row.id, iso(at)))),
                Effect.catchTag("MailSendError", (error) =>
                  Effect.gen(function* () {
                    const at = yield* Clock.currentTimeMillis
                    const retry =
                      error.retryable && row.attempts < options.maxAttempts
                        ? Option.some(iso(at + Duration.toMillis(backoff(row.attempts))))
                        : Option.none()
                    yield* Effect.logWarning("mail not sent", {
                      mailId: row.id,
                      attempt: row.attempts,
                      error: error.message
                    })
                    yield* outbox.markFailed(row.id, error.message, retry)
                  })
                )
              ),
            { concurrency: 4, discard: true }
          )
          return rows.length
        }).pipe(Effect.withSpan("MailRunner.runOnce"))
        return MailRunner.of({ runOnce })
      })
    )

  /** Runs the runner in the background for the lifetime of the layer. */
  static readonly background = (options: MailRunnerOptions = defaultMailRunnerOptions) =>
    runEvery(
      "mail runner",
      options.interval,
      Effect.flatMap(Effect.service(MailRunner), (runner) => runner.runOnce)
    ).pipe(Layer.provideMerge(MailRunner.make(options)))
}
