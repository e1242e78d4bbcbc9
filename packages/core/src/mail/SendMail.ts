import { Duration, Effect, Option, Schema } from "effect"
import { define, handler, type JobHandler, JobFailure, stop } from "../jobs/Job.ts"
import { Jobs } from "../jobs/Jobs.ts"
import { nowIso } from "../kernel/Time.ts"
import { type MailMessage, MailOutbox, MailTransport } from "./Mail.ts"

/** Delay before attempt `attempts + 1`: 10 s doubling, at most one hour. */
export const backoff = (attempts: number): Duration.Duration =>
  Duration.millis(Math.min(10_000 * 2 ** Math.max(attempts - 1, 0), 3_600_000))

/** Sends one outbox row; the job's id is the mail's id. */
export const sendMail = define({
  kind: "mail_send",
  payload: Schema.Struct({ mailId: Schema.String }),
  phases: ["send"],
  maxAttempts: 8,
  backoff
})

/** Stores the message and the job that sends it; call it inside the write's transaction. */
export const mailQueue = Effect.gen(function* () {
  const outbox = yield* MailOutbox
  const jobs = yield* Jobs
  return Effect.fn("Mail.queue")(function* (message: MailMessage, createdAt: string) {
    yield* outbox.enqueue(message, createdAt)
    yield* jobs.enqueue(sendMail, { mailId: message.id }, { id: message.id, runAt: createdAt })
  })
})

export interface SendMailOptions {
  /** Attempts before a message ends as `failed` (default 8). */
  readonly maxAttempts?: number
}

/** Hands a queued row to the transport; a refusal that retrying cannot help ends the row `failed` at once. */
export const sendMailHandler = (
  options: SendMailOptions = {}
): Effect.Effect<JobHandler, never, MailOutbox | MailTransport> =>
  Effect.gen(function* () {
    const outbox = yield* MailOutbox
    const transport = yield* MailTransport
    const definition = { ...sendMail, maxAttempts: options.maxAttempts ?? 8 }
    return handler(definition, {
      run: (_phase, job) =>
        Effect.gen(function* () {
          const row = yield* outbox.get(job.payload.mailId)
          // A cancelled (or already sent) row is not sent again.
          if (Option.isNone(row) || row.value.state !== "queued") return stop
          yield* transport.send(row.value).pipe(
            Effect.catchTag("MailSendError", (error) =>
              Effect.andThen(
                Effect.logWarning("mail not sent", {
                  mailId: job.payload.mailId,
                  attempt: job.attempts,
                  error: error.message
                }),
                Effect.andThen(
                  outbox.recordFailure(job.payload.mailId, error.message),
                  Effect.fail(new JobFailure({ message: error.message, retryable: error.retryable }))
                )
              )
            )
          )
          yield* outbox.markSent(job.payload.mailId, yield* nowIso)
        }),
      onFailed: (job, error) => outbox.markFailed(job.payload.mailId, error)
    })
  })
