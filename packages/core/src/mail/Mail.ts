import { Context, Effect, Option, Schema } from "effect"

/** An outgoing message as handed to a transport. */
export interface MailMessage {
  readonly id: string
  readonly from: string
  readonly to: string
  readonly subject: string
  readonly text: string
}

export interface OutboxRow extends MailMessage {
  readonly state: "queued" | "sent" | "failed" | "cancelled"
  readonly attempts: number
  readonly nextAttemptAt: string
  readonly lastError: string | null
  readonly sentAt: string | null
  readonly createdAt: string
}

/** Durable queue of outgoing mail: rows are claimed by one runner at a time and survive restarts. */
export class MailOutbox extends Context.Service<
  MailOutbox,
  {
    readonly enqueue: (message: MailMessage, createdAt: string) => Effect.Effect<void>
    /**
     * Claims up to `limit` queued rows due at `now` that no other runner holds, leasing them until `leaseUntil`
     * (PostgreSQL: `FOR UPDATE SKIP LOCKED`). Each claim counts an attempt.
     */
    readonly claim: (now: string, leaseUntil: string, limit: number) => Effect.Effect<ReadonlyArray<OutboxRow>>
    readonly markSent: (id: string, sentAt: string) => Effect.Effect<void>
    /** Reschedules the row, or ends it as `failed` when `retryAt` is none. */
    readonly markFailed: (id: string, error: string, retryAt: Option.Option<string>) => Effect.Effect<void>
    /** Marks the row `cancelled` if it has not been sent yet, so no runner sends it. */
    readonly cancel: (id: string) => Effect.Effect<void>
    readonly get: (id: string) => Effect.Effect<Option.Option<OutboxRow>>
  }
>()("@hostplane/core/mail/MailOutbox") {}

export class MailSendError extends Schema.TaggedError<MailSendError>()("MailSendError", {
  message: Schema.String,
  /** False when retrying cannot help (a rejected recipient). */
  retryable: Schema.Boolean
}) {}

/** Delivers one message: an `.eml` folder, SMTP or a provider API. */
export class MailTransport extends Context.Service<
  MailTransport,
  { readonly send: (message: MailMessage) => Effect.Effect<void, MailSendError> }
>()("@hostplane/core/mail/MailTransport") {}
