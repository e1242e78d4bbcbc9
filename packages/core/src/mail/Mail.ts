import { Context, Effect, Layer, Option, Schema } from "effect"
import { portOff } from "../kernel/Port.ts"

/** An outgoing message as handed to a transport. */
export interface MailMessage {
  readonly id: string
  readonly from: string
  readonly to: string
  readonly subject: string
  readonly text: string
}

/** A message and its outcome; when it is tried, and how often, is its `mail_send` job's business. */
export interface OutboxRow extends MailMessage {
  readonly state: "queued" | "sent" | "failed" | "cancelled"
  /** What the last failed attempt answered. */
  readonly lastError: string | null
  readonly sentAt: string | null
  readonly createdAt: string
}

/**
 * Outgoing mail rows. A row is written `queued` (`mailQueue` adds the job that sends it, in the same transaction) and
 * ends `sent`, `failed` or `cancelled`.
 */
export class MailOutbox extends Context.Service<
  MailOutbox,
  {
    /** Stores a `queued` row; it is sent only by the `mail_send` job `mailQueue` enqueues with it. */
    readonly enqueue: (message: MailMessage, createdAt: string) => Effect.Effect<void>
    /** A row sent twice (a lease lost mid-send) keeps its first `sentAt`. */
    readonly markSent: (id: string, sentAt: string) => Effect.Effect<void>
    /** Records a failed attempt on a queued row, which stays queued for the next one. */
    readonly recordFailure: (id: string, error: string) => Effect.Effect<void>
    /** Ends a queued row as `failed`. */
    readonly markFailed: (id: string, error: string) => Effect.Effect<void>
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

/** A message relayed as its sender wrote it (the node mail relay): the bytes go on unchanged. */
export interface RawMailMessage {
  /** The relay's id (`mail_...`): the outbox file's name, and the answer when nothing better names the message. */
  readonly id: string
  /** The envelope sender (`MAIL FROM`). */
  readonly from: string
  /** The envelope recipients (`RCPT TO`). */
  readonly to: ReadonlyArray<string>
  /** The whole RFC 5322 message. */
  readonly raw: Uint8Array
  /** Its `Message-ID` header without the brackets; null when it has none. */
  readonly messageId: string | null
}

/** Delivers one message: an `.eml` folder, SMTP or a provider API. */
export class MailTransport extends Context.Service<
  MailTransport,
  {
    readonly send: (message: MailMessage) => Effect.Effect<void, MailSendError>
    /**
     * Hands a message on byte for byte; answers the transport's id for it, the one the provider's events name (SES
     * over SMTP: the id of its `250` reply; the outbox: the `Message-ID` without brackets, else the relay's id).
     */
    readonly sendRaw: (message: RawMailMessage) => Effect.Effect<string, MailSendError>
  }
>()("@hostplane/core/mail/MailTransport") {
  /**
   * No transport (a host that sends only from a runner elsewhere): the node mail relay answers 503
   * `mail_unavailable`; a runner given it fails every send without retrying.
   */
  static readonly off: Layer.Layer<MailTransport> = Layer.sync(MailTransport, () =>
    portOff({
      send: () => Effect.fail(noTransport),
      sendRaw: () => Effect.fail(noTransport)
    })
  )
}

const noTransport = new MailSendError({ message: "this deployment has no mail transport", retryable: false })
