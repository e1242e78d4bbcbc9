import { type KeyObject, verify as verifySignature, X509Certificate } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { Email } from "@hostplane/core"
import { Config, Duration, Effect, Layer, Option } from "effect"

export interface Options {
  /**
   * `SERVICE_MAIL_SNS_CERTS`: a folder of PEM files named as the last path segment of the certificate URL, read
   * instead of fetching (closed networks, tests); trusted as they are.
   */
  readonly certsDir?: string | undefined
  /** `SERVICE_MAIL_SNS_CONFIRM_VIA`: a base URL the confirmation GET goes through, keeping the path and query. */
  readonly confirmVia?: string | undefined
  /** Longest wait for a certificate or a confirmation; default 10 seconds. */
  readonly timeout?: Duration.Input
}

const fileName = /^[A-Za-z0-9._-]+\.pem$/

/**
 * Amazon SNS signatures checked with node:crypto: the certificate of a URL (fetched over https, which checks it
 * against the system's CA store, or read from the folder) is cached by URL, successes only, so a failed fetch is
 * tried again on the next message.
 */
export const make = (options: Options = {}): Email.MailNotifications["Service"] => {
  const cache = new Map<string, KeyObject>()
  const timeout = Duration.toMillis(options.timeout ?? Duration.seconds(10))

  const pemOf = (url: string) =>
    Effect.tryPromise(async () => {
      if (options.certsDir !== undefined) {
        const name = Path.posix.basename(new URL(url).pathname)
        if (!fileName.test(name)) throw new Error("certificate file name is not usable")
        return Fs.readFile(Path.join(options.certsDir, name), "utf8")
      }
      const response = await fetch(url, { signal: AbortSignal.timeout(timeout), redirect: "error" })
      if (!response.ok) throw new Error(`certificate fetch answered ${response.status}`)
      return response.text()
    })

  const keyOf = (url: string): Effect.Effect<Option.Option<KeyObject>> => {
    const cached = cache.get(url)
    if (cached !== undefined) return Effect.succeedSome(cached)
    return pemOf(url).pipe(
      Effect.flatMap((pem) => Effect.try(() => new X509Certificate(pem).publicKey)),
      Effect.tap((key) => Effect.sync(() => cache.set(url, key))),
      Effect.map(Option.some),
      Effect.catch((cause) =>
        Effect.as(
          Effect.logWarning("mail webhook: no signing certificate", { url, cause: String(cause) }),
          Option.none()
        )
      )
    )
  }

  const verify = Effect.fn("MailNotificationsSns.verify")(function* (signature: Email.SnsSignature) {
    const key = yield* keyOf(signature.certUrl)
    if (Option.isNone(key)) return false
    const bytes = Buffer.from(signature.signature, "base64")
    return yield* Effect.sync(() => {
      try {
        return verifySignature(
          signature.version === "1" ? "sha1" : "sha256",
          Buffer.from(signature.canonical, "utf8"),
          key.value,
          bytes
        )
      } catch {
        return false
      }
    })
  })

  const confirm = Effect.fn("MailNotificationsSns.confirm")(function* (subscribeUrl: string) {
    const url = new URL(subscribeUrl)
    const target =
      options.confirmVia === undefined
        ? url.href
        : `${options.confirmVia.replace(/\/+$/, "")}${url.pathname}${url.search}`
    return yield* Effect.tryPromise(async () => {
      const response = await fetch(target, { signal: AbortSignal.timeout(timeout), redirect: "error" })
      await response.body?.cancel()
      return response.ok
    }).pipe(Effect.orElseSucceed(() => false))
  })

  return Email.MailNotifications.of({ verify, confirm })
}

export const layer = (options: Options = {}): Layer.Layer<Email.MailNotifications> =>
  Layer.sync(Email.MailNotifications, () => make(options))

const optional = (name: string) =>
  Config.option(Config.String(name)).pipe(
    Config.map((value) => Option.getOrUndefined(Option.filter(value, (text) => text.trim() !== "")))
  )

/** `SERVICE_MAIL_SNS_CERTS` and `SERVICE_MAIL_SNS_CONFIRM_VIA`, both optional. */
export const layerConfig: Layer.Layer<Email.MailNotifications, Config.ConfigError> = Layer.unwrap(
  Effect.map(
    Config.all({ certsDir: optional("SERVICE_MAIL_SNS_CERTS"), confirmVia: optional("SERVICE_MAIL_SNS_CONFIRM_VIA") }),
    (options) => layer(options)
  )
)
