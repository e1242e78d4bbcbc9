import { Context, Effect, Layer } from "effect"
import { portOff } from "../kernel/Port.ts"

/** One SNS signature to check: the canonical string, the base64 signature and the certificate that signed it. */
export interface SnsSignature {
  readonly certUrl: string
  /** `1` is SHA1withRSA, `2` SHA256withRSA. */
  readonly version: "1" | "2"
  readonly canonical: string
  readonly signature: string
}

/**
 * The mail provider's notification service (Amazon SNS): checks signatures with the signing certificate (fetched
 * once per URL, or read from a folder on closed networks) and completes subscription confirmations.
 */
export class MailNotifications extends Context.Service<
  MailNotifications,
  {
    /** False when the certificate cannot be had or the signature does not match. */
    readonly verify: (signature: SnsSignature) => Effect.Effect<boolean>
    /** The confirmation GET to a `SubscribeURL` that passed the host rule; false when it did not succeed. */
    readonly confirm: (subscribeUrl: string) => Effect.Effect<boolean>
  }
>()("@hostplane/core/email/MailNotifications") {
  /** No SNS adapter: verifies nothing, so the mail webhook refuses every notification (403). */
  static readonly off: Layer.Layer<MailNotifications> = Layer.sync(MailNotifications, () =>
    portOff({
      verify: () => Effect.succeed(false),
      confirm: () => Effect.succeed(false)
    })
  )
}
