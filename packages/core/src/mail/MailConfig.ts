import { Config, Context, Duration, Effect, Layer } from "effect"
import { optionalSetting } from "../kernel/Settings.ts"

/** The mail settings of decisions.md part 2. */
export interface MailConfigShape {
  /** The project mail domain; empty means email grants answer 409 `email_unavailable`. */
  readonly mailDomain: string
  /** The sender of service mail. */
  readonly mailFrom: string
  /** `SERVICE_MAIL_TOPIC_ARN`: the SNS topic the mail webhook accepts; empty turns the webhook off (501). */
  readonly topicArn: string
  /**
   * `SERVICE_MAIL_RELAY_LEASE`: how long a relayed message's hourly-cap slot stays held without a renewal (the relay
   * renews it every third of that while the transport has the message), so a slot of a process that died mid-send
   * stops counting once it ends.
   */
  readonly relayLease: Duration.Duration
}

/** A held relay slot's lease unless `SERVICE_MAIL_RELAY_LEASE` says otherwise. */
export const defaultRelayLease = Duration.seconds(30)

const makeMailConfig = (overrides: Partial<MailConfigShape>): MailConfigShape => {
  const mailDomain = overrides.mailDomain ?? ""
  return {
    mailDomain,
    mailFrom:
      overrides.mailFrom ??
      (mailDomain === "" ? "hostplane <no-reply@localhost>" : `hostplane <no-reply@${mailDomain}>`),
    topicArn: overrides.topicArn ?? "",
    relayLease: overrides.relayLease ?? defaultRelayLease
  }
}

/** Mail settings; the sender defaults to `no-reply@` the mail domain. */
export class MailConfig extends Context.Service<MailConfig, MailConfigShape>()("@hostplane/core/mail/MailConfig") {
  static readonly make = (overrides: Partial<MailConfigShape> = {}) =>
    Layer.succeed(MailConfig, makeMailConfig(overrides))

  /** `SERVICE_MAIL_DOMAIN`, `SERVICE_MAIL_FROM`, `SERVICE_MAIL_TOPIC_ARN`, `SERVICE_MAIL_RELAY_LEASE`. */
  static readonly layerConfig = Layer.effect(
    MailConfig,
    Effect.map(
      Config.all({
        mailDomain: optionalSetting("SERVICE_MAIL_DOMAIN"),
        mailFrom: optionalSetting("SERVICE_MAIL_FROM"),
        topicArn: optionalSetting("SERVICE_MAIL_TOPIC_ARN"),
        relayLease: Config.option(Config.Duration("SERVICE_MAIL_RELAY_LEASE"))
      }),
      (env) => {
        const overrides: { -readonly [K in keyof MailConfigShape]?: MailConfigShape[K] } = {}
        if (env.mailDomain._tag === "Some") overrides.mailDomain = env.mailDomain.value.toLowerCase()
        if (env.mailFrom._tag === "Some") overrides.mailFrom = env.mailFrom.value
        if (env.topicArn._tag === "Some") overrides.topicArn = env.topicArn.value.trim()
        if (env.relayLease._tag === "Some") overrides.relayLease = env.relayLease.value
        return makeMailConfig(overrides)
      }
    )
  )
}
