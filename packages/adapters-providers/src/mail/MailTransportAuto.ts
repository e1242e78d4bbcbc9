import type { Mail } from "@hostplane/core"
import { Config, Effect, Layer, Option, Redacted } from "effect"
import * as MailTransportOutboxDir from "./MailTransportOutboxDir.ts"
import * as MailTransportSmtp from "./MailTransportSmtp.ts"

/**
 * The transport of a running server: SMTP when `SERVICE_SMTP_URL` is set, otherwise `.eml` files in
 * `<SERVICE_DATA_DIR or .hostplane>/outbox` (decisions.md part 5). An empty setting counts as unset.
 */
export const layerConfig: Layer.Layer<Mail.MailTransport, Config.ConfigError> = Layer.unwrap(
  Effect.gen(function* () {
    const url = yield* Config.option(MailTransportSmtp.urlConfig)
    return Option.match(
      Option.filter(url, (value) => Redacted.value(value).trim() !== ""),
      {
        onNone: () => MailTransportOutboxDir.layerConfig,
        onSome: (value) => MailTransportSmtp.layer({ url: value })
      }
    )
  })
)
