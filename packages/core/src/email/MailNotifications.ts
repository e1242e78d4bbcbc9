import { Context, Effect, Layer, Option } from "effect"

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
  /** Verifies nothing: without an adapter every notification is refused. */
  static readonly none = MailNotifications.of({
    verify: () => Effect.succeed(false),
    confirm: () => Effect.succeed(false)
  })

  /** The host's adapter when it provides one, else `none`. */
  static readonly layerDefault = Layer.effect(
    MailNotifications,
    Effect.map(
      Effect.serviceOption(MailNotifications),
      Option.getOrElse(() => MailNotifications.none)
    )
  )
}
