import { Option, Schema } from "effect"

/**
 * An Amazon SNS HTTPS message as posted (JSON in a `text/plain` body). The signature's fields are optional here so
 * that an unsigned message is refused as unauthenticated (403), like a wrongly signed one, not as malformed (400).
 */
export const SnsEnvelope = Schema.Struct({
  Type: Schema.String,
  MessageId: Schema.String,
  TopicArn: Schema.String,
  Message: Schema.String,
  Timestamp: Schema.String,
  SignatureVersion: Schema.optionalKey(Schema.String),
  Signature: Schema.optionalKey(Schema.String),
  SigningCertURL: Schema.optionalKey(Schema.String),
  Subject: Schema.optionalKey(Schema.NullOr(Schema.String)),
  SubscribeURL: Schema.optionalKey(Schema.String),
  Token: Schema.optionalKey(Schema.String)
})
export type SnsEnvelope = typeof SnsEnvelope.Type

export const decodeEnvelope = Schema.decodeUnknownOption(Schema.fromJsonString(SnsEnvelope))

const notificationFields = ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"] as const
const confirmationFields = ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"] as const

/**
 * The string SNS signs: `name\nvalue\n` for each field in the documented order; a notification's `Subject` only when
 * present, a confirmation's `SubscribeURL` and `Token` always. None when a confirmation lacks one of them.
 */
export const canonicalString = (envelope: SnsEnvelope): Option.Option<string> => {
  const fields = envelope.Type === "Notification" ? notificationFields : confirmationFields
  let out = ""
  for (const name of fields) {
    const value = envelope[name]
    if (value === undefined || value === null) {
      if (name === "Subject") continue
      return Option.none()
    }
    out += `${name}\n${value}\n`
  }
  return Option.some(out)
}

const snsHost = /^sns\.[a-z0-9-]+\.amazonaws\.com$/

/**
 * The host rule for `SigningCertURL` and `SubscribeURL`: https on `sns.<region>.amazonaws.com`, default port, no
 * credentials; a certificate URL must name a `.pem` file.
 */
export const onSnsHost = (url: string, kind: "certificate" | "subscribe"): boolean => {
  if (!URL.canParse(url)) return false
  const parsed = new URL(url)
  return (
    parsed.protocol === "https:" &&
    snsHost.test(parsed.hostname) &&
    parsed.port === "" &&
    parsed.username === "" &&
    parsed.password === "" &&
    (kind === "subscribe" || parsed.pathname.endsWith(".pem"))
  )
}

/** The SES notification inside a `Notification`'s `Message` (the fields this service reads). */
export const SesNotification = Schema.Struct({
  notificationType: Schema.optionalKey(Schema.String),
  eventType: Schema.optionalKey(Schema.String),
  mail: Schema.optionalKey(
    Schema.Struct({
      messageId: Schema.optionalKey(Schema.String),
      source: Schema.optionalKey(Schema.String),
      commonHeaders: Schema.optionalKey(
        Schema.Struct({
          from: Schema.optionalKey(Schema.Array(Schema.String)),
          subject: Schema.optionalKey(Schema.String)
        })
      )
    })
  ),
  receipt: Schema.optionalKey(
    Schema.Struct({
      recipients: Schema.optionalKey(Schema.Array(Schema.String)),
      spfVerdict: Schema.optionalKey(Schema.Struct({ status: Schema.String })),
      action: Schema.optionalKey(Schema.Struct({ encoding: Schema.optionalKey(Schema.String) }))
    })
  ),
  content: Schema.optionalKey(Schema.String)
})
export type SesNotification = typeof SesNotification.Type

export const decodeSes = Schema.decodeUnknownOption(Schema.fromJsonString(SesNotification))
