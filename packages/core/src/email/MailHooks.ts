import { Clock, Context, Effect, Layer, Option } from "effect"
import { BadRequest, Forbidden, MailWebhookOff } from "../errors/Errors.ts"
import { newId } from "../kernel/Ids.ts"
import { Settings } from "../kernel/Settings.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { Transactor } from "../kernel/Transactor.ts"
import { MailConfig } from "../mail/MailConfig.ts"
import { ProjectStore } from "../projects/ProjectStore.ts"
import type { MailOutcome } from "./Email.ts"
import { EmailStore } from "./EmailStore.ts"
import { MailNotifications } from "./MailNotifications.ts"
import { canonicalString, decodeEnvelope, decodeSes, onSnsHost, type SesNotification, type SnsEnvelope } from "./Sns.ts"

const encoder = new TextEncoder()

const eventOutcomes: Record<string, MailOutcome> = {
  Bounce: "bounced",
  Complaint: "complained",
  Delivery: "delivered"
}

const decodeContent = (notification: SesNotification): Uint8Array => {
  const content = notification.content ?? ""
  if ((notification.receipt?.action?.encoding ?? "").toUpperCase() !== "BASE64") return encoder.encode(content)
  try {
    return Uint8Array.from(atob(content.replace(/\s+/g, "")), (c) => c.charCodeAt(0))
  } catch {
    return encoder.encode(content)
  }
}

const concat = (head: Uint8Array, tail: Uint8Array): Uint8Array => {
  const out = new Uint8Array(head.length + tail.length)
  out.set(head, 0)
  out.set(tail, head.length)
  return out
}

const oneLine = (value: string): string => value.replace(/[\r\n]+/g, " ").trim()

/**
 * The mail webhook of spec 4.8 and part 5 point 5: Amazon SNS messages for Amazon SES, accepted only with the
 * configured topic, a certificate URL on SNS's regional host and a verifying signature (else 403; no topic set: 501).
 * A notification's `MessageId` is recorded in the transaction that applies it, so a replay changes nothing.
 */
export class MailHooks extends Context.Service<
  MailHooks,
  { readonly receive: (body: string) => Effect.Effect<void, MailWebhookOff | BadRequest | Forbidden> }
>()("@hostplane/core/email/MailHooks") {
  static readonly layer = Layer.effect(
    MailHooks,
    Effect.gen(function* () {
      const config = yield* MailConfig
      const settings = yield* Settings
      const store = yield* EmailStore
      const projects = yield* ProjectStore
      const notifications = yield* MailNotifications
      const transactor = yield* Transactor
      const tokens = yield* Tokens
      const serviceHost = URL.canParse(settings.publicUrl) ? new URL(settings.publicUrl).hostname : "localhost"

      const refuse = (message: string) => Effect.fail(new Forbidden({ message }))

      const authenticate = Effect.fnUntraced(function* (envelope: SnsEnvelope) {
        if (envelope.TopicArn !== config.topicArn) return yield* refuse("TopicArn is not this service's topic")
        const { Signature: signature, SigningCertURL: certUrl } = envelope
        if (signature === undefined || signature === "" || certUrl === undefined) {
          return yield* refuse("the message is not signed")
        }
        if (!onSnsHost(certUrl, "certificate")) {
          return yield* refuse("SigningCertURL is not an https .pem URL on sns.<region>.amazonaws.com")
        }
        const version = envelope.SignatureVersion
        if (version !== "1" && version !== "2") return yield* refuse("SignatureVersion must be 1 or 2")
        const canonical = canonicalString(envelope)
        if (Option.isNone(canonical)) return yield* refuse("the message lacks a signed field")
        const valid = yield* notifications.verify({
          certUrl,
          version,
          canonical: canonical.value,
          signature
        })
        if (!valid) return yield* refuse("the signature does not verify")
      })

      /** One `in` row per recipient holding an address here: delivered while granted, refused after a revoke. */
      const received = Effect.fnUntraced(function* (notification: SesNotification, at: string, now: number) {
        const mail = notification.mail
        const sender = oneLine(mail?.source ?? "")
        const from = oneLine(mail?.commonHeaders?.from?.[0] ?? sender)
        const subject = oneLine(mail?.commonHeaders?.subject ?? "")
        const spf = notification.receipt?.spfVerdict?.status.toLowerCase() ?? null
        const content = decodeContent(notification)
        const recipients = new Set((notification.receipt?.recipients ?? []).map((r) => r.trim().toLowerCase()))
        for (const recipient of recipients) {
          const address = yield* store.findAddress(recipient)
          if (Option.isNone(address)) continue
          if (Option.isNone(yield* projects.findById(address.value.projectId))) continue
          const granted = address.value.granted
          const added =
            `Received: from ${sender === "" ? "unknown" : sender} by ${serviceHost} with SNS id ` +
            `${oneLine(mail?.messageId ?? "unknown")}; ${new Date(now).toUTCString()}\r\n` +
            `Authentication-Results: ${serviceHost}; spf=${spf ?? "none"} smtp.mailfrom=${sender}\r\n`
          yield* store.insertLog({
            id: yield* newId(tokens, "mail"),
            projectId: address.value.projectId,
            direction: "in",
            from,
            to: recipient,
            subject,
            outcome: granted ? "received" : "refused",
            size: content.length,
            spf,
            hasRaw: granted,
            createdAt: at,
            providerMessageId: mail?.messageId ?? null,
            raw: granted ? concat(encoder.encode(added), content) : null
          })
        }
      })

      const notification = Effect.fnUntraced(function* (envelope: SnsEnvelope) {
        const now = yield* Clock.currentTimeMillis
        const at = new Date(now).toISOString()
        yield* transactor.withTransaction(
          Effect.gen(function* () {
            if (!(yield* store.claimNotification(envelope.MessageId, envelope.Type, at))) return
            const ses = decodeSes(envelope.Message)
            if (Option.isNone(ses)) return
            const kind = ses.value.notificationType ?? ses.value.eventType ?? ""
            if (kind === "Received") return yield* received(ses.value, at, now)
            const outcome = eventOutcomes[kind]
            const messageId = ses.value.mail?.messageId
            if (outcome !== undefined && messageId !== undefined) yield* store.setOutcome(messageId, outcome)
          })
        )
      })

      const receive = Effect.fn("MailHooks.receive")(function* (body: string) {
        if (config.topicArn === "") {
          return yield* new MailWebhookOff({ message: "the mail webhook is off: SERVICE_MAIL_TOPIC_ARN is not set" })
        }
        const envelope = decodeEnvelope(body)
        if (Option.isNone(envelope)) {
          return yield* new BadRequest({ message: "the body is not an SNS message" })
        }
        yield* authenticate(envelope.value)
        switch (envelope.value.Type) {
          case "SubscriptionConfirmation": {
            const url = envelope.value.SubscribeURL ?? ""
            if (!onSnsHost(url, "subscribe")) return yield* refuse("SubscribeURL is not on sns.<region>.amazonaws.com")
            const confirmed = yield* notifications.confirm(url)
            if (!confirmed) yield* Effect.logWarning("mail webhook: subscription confirmation failed", { url })
            return
          }
          case "Notification":
            return yield* notification(envelope.value)
          default:
            return
        }
      })

      return MailHooks.of({ receive })
    })
  )
}
