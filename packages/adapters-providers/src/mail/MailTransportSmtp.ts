import { Mail } from "@hostplane/core"
import { Clock, Config, ConfigProvider, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { createRequire } from "node:module"
import type * as Nodemailer from "nodemailer"
import * as Eml from "./Eml.ts"

export interface Options {
  /** `smtp://[user:pass@]host[:port]` (STARTTLS when offered) or `smtps://...` (TLS from the start). */
  readonly url: Redacted.Redacted<string>
  /** Longest wait for the connection and for the greeting; default 10 seconds. */
  readonly connectTimeout?: Duration.Input
  /** Longest silence once connected; default 30 seconds, well inside the runner's lease. */
  readonly socketTimeout?: Duration.Input
}

/** What of an SMTP URL is safe to show: scheme, user and host, never the password. */
export interface Endpoint {
  readonly secure: boolean
  readonly host: string
  readonly port: number
  readonly user: string | null
  /** `smtps://user@host:465`. */
  readonly display: string
}

const invalidUrl = new Config.ConfigError(
  new ConfigProvider.SourceError({
    message: "SERVICE_SMTP_URL must look like smtp://user:pass@host:587 or smtps://user:pass@host:465"
  })
)

const decodeComponent = (value: string): string => {
  try {
    return decodeURIComponent(value)
  } catch {
    return value
  }
}

const parse = (url: Redacted.Redacted<string>) => {
  const raw = Redacted.value(url).trim()
  if (!URL.canParse(raw)) return Effect.fail(invalidUrl)
  const parsed = new URL(raw)
  const secure = parsed.protocol === "smtps:"
  if ((!secure && parsed.protocol !== "smtp:") || parsed.hostname === "") return Effect.fail(invalidUrl)
  const port = parsed.port === "" ? (secure ? 465 : 587) : Number(parsed.port)
  const user = parsed.username === "" ? null : decodeComponent(parsed.username)
  const display = `${parsed.protocol}//${user === null ? "" : `${parsed.username}@`}${parsed.hostname}:${port}`
  const endpoint: Endpoint = { secure, host: parsed.hostname, port, user, display }
  const secrets = [parsed.password, decodeComponent(parsed.password)].filter((secret) => secret !== "")
  return Effect.succeed({ raw, endpoint, secrets })
}

/** Reads the parts of an SMTP URL that may be logged; fails without echoing the URL. */
export const endpoint = (url: Redacted.Redacted<string>): Effect.Effect<Endpoint, Config.ConfigError> =>
  Effect.map(parse(url), (parsed) => parsed.endpoint)

/** The fields nodemailer puts on the errors it rejects with; every one may be missing. */
const NodemailerFailure = Schema.Struct({
  message: Schema.optional(Schema.String),
  code: Schema.optional(Schema.String),
  responseCode: Schema.optional(Schema.Number),
  permanent: Schema.optional(Schema.Boolean)
})
const decodeFailure = Schema.decodeUnknownOption(NodemailerFailure)
const noFields: typeof NodemailerFailure.Type = {}

/**
 * Only a refusal of this message is final: a 5xx reply (RFC 5321 permanent negative completion, 503 excepted as
 * nodemailer does) or an envelope nodemailer refuses before sending. Connection, TLS, DNS, timeout and 4xx are
 * transient; so are rejected credentials, since fixing the setting lets the same message through.
 */
const isPermanent = (failure: typeof NodemailerFailure.Type): boolean => {
  if (failure.code === "EAUTH" || failure.code === "ENOAUTH") return false
  if (failure.responseCode !== undefined) {
    return failure.permanent ?? (failure.responseCode >= 500 && failure.responseCode !== 503)
  }
  return failure.code === "EENVELOPE"
}

const toSendError = (cause: unknown, secrets: ReadonlyArray<string>): Mail.MailSendError => {
  const failure = Option.getOrElse(decodeFailure(cause), () => noFields)
  const detail = failure.message ?? String(cause)
  const message = `SMTP delivery failed${failure.code === undefined ? "" : ` (${failure.code})`}: ${detail}`
  return new Mail.MailSendError({
    message: secrets.reduce((scrubbed, secret) => scrubbed.split(secret).join("***"), message),
    retryable: !isPermanent(failure)
  })
}

/**
 * The id a server names the message by in its final reply: Amazon SES's `250 Ok <id>` (the `mail.messageId` of its
 * SNS events), Postfix's `250 2.0.0 Ok: queued as <id>`; null when the reply names none.
 */
export const replyId = (response: string): string | null =>
  /^250[ -](?:\d\.\d{1,3}\.\d{1,3}\s+)?ok:?\s+(?:queued as\s+)?<?([^\s<>]+)>?/i.exec(response.trim())?.[1] ?? null

/**
 * nodemailer, loaded when a transport is made rather than with the server: a server without `SERVICE_SMTP_URL` never
 * makes one, and it takes about 2.6 MiB of heap.
 */
const nodemailer = (): typeof Nodemailer => createRequire(import.meta.url)("nodemailer")

/** A transport that delivers each message over SMTP, one connection per message; closed with its scope. */
export const make = Effect.fnUntraced(function* (options: Options) {
  const { raw, endpoint, secrets } = yield* parse(options.url)
  const connectTimeout = Duration.toMillis(options.connectTimeout ?? Duration.seconds(10))
  const transporter = yield* Effect.acquireRelease(
    Effect.sync(() =>
      nodemailer().createTransport({
        url: raw,
        connectionTimeout: connectTimeout,
        greetingTimeout: connectTimeout,
        socketTimeout: Duration.toMillis(options.socketTimeout ?? Duration.seconds(30))
      })
    ),
    (transporter) => Effect.sync(() => transporter.close())
  )
  yield* Effect.logInfo("mail: sending through SMTP", { server: endpoint.display })
  const send = Effect.fn("MailTransportSmtp.send")(function* (message: Mail.MailMessage) {
    const now = yield* Clock.currentTimeMillis
    yield* Effect.tryPromise({
      try: (signal) =>
        transporter.sendMail({
          from: message.from,
          to: message.to,
          subject: message.subject,
          text: message.text,
          messageId: Eml.messageId(message),
          date: new Date(now),
          textEncoding: "quoted-printable",
          xMailer: false,
          signal
        }),
      catch: (cause) => toSendError(cause, secrets)
    })
  })
  const sendRaw = Effect.fn("MailTransportSmtp.sendRaw")(function* (message: Mail.RawMailMessage) {
    const info = yield* Effect.tryPromise({
      // `raw` is sent as it is: nodemailer adds no header to it.
      try: (signal) =>
        transporter.sendMail({
          envelope: { from: message.from, to: [...message.to] },
          raw: Buffer.from(message.raw.buffer, message.raw.byteOffset, message.raw.byteLength),
          signal
        }),
      catch: (cause) => toSendError(cause, secrets)
    })
    const response: unknown = info.response
    return (typeof response === "string" ? replyId(response) : null) ?? message.messageId ?? message.id
  })
  return Mail.MailTransport.of({ send, sendRaw })
})

/** The SMTP transport as a layer; an unusable URL fails it with a `ConfigError` that does not echo the URL. */
export const layer = (options: Options): Layer.Layer<Mail.MailTransport, Config.ConfigError> =>
  Layer.effect(Mail.MailTransport, make(options))

/** `SERVICE_SMTP_URL`, read as a secret so it never reaches a log. */
export const urlConfig: Config.Config<Redacted.Redacted<string>> = Config.Redacted("SERVICE_SMTP_URL")

/** SMTP configured by `SERVICE_SMTP_URL`, which must be set. */
export const layerConfig: Layer.Layer<Mail.MailTransport, Config.ConfigError> = Layer.unwrap(
  Effect.map(urlConfig, (url) => layer({ url }))
)
