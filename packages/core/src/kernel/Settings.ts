import { Config, Context, Duration, Effect, Layer } from "effect"
import { canonicalHost } from "./HostName.ts"

/** Deployment settings of decisions.md part 2 that the core rules depend on. */
export interface SettingsShape {
  readonly productName: string
  readonly publicUrl: string
  readonly appDomain: string
  readonly serviceDomains: ReadonlyArray<string>
  readonly fallbackOrigin: string
  readonly mailDomain: string
  readonly mailFrom: string
  readonly dnsNameservers: ReadonlyArray<string>
  readonly devAuth: boolean
  readonly oauthRedirects: ReadonlyArray<string>
  readonly sessionTtl: Duration.Duration
  readonly inviteTtl: Duration.Duration
}

const list = (value: string): ReadonlyArray<string> =>
  value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0)

/** Fills every setting the caller leaves out with the embedded default. */
export const makeSettings = (overrides: Partial<SettingsShape> = {}): SettingsShape => {
  const publicUrl = (overrides.publicUrl ?? "http://localhost:8080").replace(/\/+$/, "")
  const appDomain = overrides.appDomain ?? "apps.localhost"
  const mailDomain = overrides.mailDomain ?? ""
  return {
    productName: "hostplane",
    fallbackOrigin: `fallback.${appDomain}`,
    mailFrom: mailDomain === "" ? "hostplane <no-reply@localhost>" : `hostplane <no-reply@${mailDomain}>`,
    dnsNameservers: ["ns1.hostplane.localhost", "ns2.hostplane.localhost"],
    devAuth: false,
    oauthRedirects: [publicUrl],
    sessionTtl: Duration.days(30),
    inviteTtl: Duration.days(7),
    ...overrides,
    publicUrl,
    appDomain,
    mailDomain,
    // The app domain is always one of the service's own domains, whatever the setting lists.
    serviceDomains: [...new Set([appDomain, ...(overrides.serviceDomains ?? [])])]
  }
}

const hostOf = (url: string): ReadonlyArray<string> => (URL.canParse(url) ? [new URL(url).hostname] : [])

/**
 * The hostnames the service itself answers on or hands out (fallback origin, name servers, its own domains, mail
 * domain, the hosts of its public URL and OAuth redirects): a project's default hostname may never be one of them.
 */
export const serviceHostnames = (settings: SettingsShape): ReadonlySet<string> =>
  new Set(
    [
      settings.fallbackOrigin,
      ...settings.dnsNameservers,
      ...settings.serviceDomains,
      settings.mailDomain,
      ...hostOf(settings.publicUrl),
      ...settings.oauthRedirects.flatMap(hostOf)
    ]
      .map(canonicalHost)
      .filter((name) => name !== "")
  )

const optional = (name: string) => Config.option(Config.String(name))

/** Settings of the running deployment. */
export class Settings extends Context.Service<Settings, SettingsShape>()("@hostplane/core/kernel/Settings") {
  static readonly make = (overrides: Partial<SettingsShape> = {}) => Layer.succeed(Settings, makeSettings(overrides))

  /** Reads the `SERVICE_*` environment; `devAuthDefault` is on only in the embedded mode. */
  static readonly layerConfig = (options: { readonly devAuthDefault: boolean }) =>
    Layer.effect(
      Settings,
      Effect.gen(function* () {
        const env = yield* Config.all({
          productName: optional("SERVICE_PRODUCT_NAME"),
          publicUrl: optional("SERVICE_PUBLIC_URL"),
          appDomain: optional("SERVICE_APP_DOMAIN"),
          serviceDomains: optional("SERVICE_DOMAINS"),
          fallbackOrigin: optional("SERVICE_FALLBACK_ORIGIN"),
          mailDomain: optional("SERVICE_MAIL_DOMAIN"),
          mailFrom: optional("SERVICE_MAIL_FROM"),
          dnsNameservers: optional("SERVICE_DNS_NAMESERVERS"),
          devAuth: Config.option(Config.Boolean("SERVICE_ENABLE_DEV_AUTH")),
          oauthRedirects: optional("SERVICE_OAUTH_REDIRECTS"),
          sessionTtl: Config.option(Config.Duration("SERVICE_SESSION_TTL"))
        })
        const overrides: { -readonly [K in keyof SettingsShape]?: SettingsShape[K] } = {
          devAuth: env.devAuth._tag === "Some" ? env.devAuth.value : options.devAuthDefault
        }
        if (env.productName._tag === "Some") overrides.productName = env.productName.value
        if (env.publicUrl._tag === "Some") overrides.publicUrl = env.publicUrl.value.replace(/\/+$/, "")
        if (env.appDomain._tag === "Some") overrides.appDomain = env.appDomain.value.toLowerCase()
        if (env.serviceDomains._tag === "Some") overrides.serviceDomains = list(env.serviceDomains.value.toLowerCase())
        if (env.mailDomain._tag === "Some") overrides.mailDomain = env.mailDomain.value.toLowerCase()
        if (env.dnsNameservers._tag === "Some") overrides.dnsNameservers = list(env.dnsNameservers.value)
        if (env.sessionTtl._tag === "Some") overrides.sessionTtl = env.sessionTtl.value
        const base = makeSettings(overrides)
        return {
          ...base,
          fallbackOrigin: env.fallbackOrigin._tag === "Some" ? env.fallbackOrigin.value : base.fallbackOrigin,
          mailFrom: env.mailFrom._tag === "Some" ? env.mailFrom.value : base.mailFrom,
          oauthRedirects: env.oauthRedirects._tag === "Some" ? list(env.oauthRedirects.value) : [base.publicUrl]
        }
      })
    )
}
