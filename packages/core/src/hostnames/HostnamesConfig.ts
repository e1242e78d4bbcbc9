import { Config, Context, Effect, Layer } from "effect"
import { optionalSetting, settingList, Settings } from "../kernel/Settings.ts"

/** The hostname and DNS settings of decisions.md part 2. */
export interface HostnamesConfigShape {
  /** The CNAME target for custom hostnames; by default `fallback.<app domain>`. */
  readonly fallbackOrigin: string
  /** The service's name servers. */
  readonly dnsNameservers: ReadonlyArray<string>
}

/** Hostname and DNS settings; the fallback origin defaults under the shared app domain. */
export class HostnamesConfig extends Context.Service<HostnamesConfig, HostnamesConfigShape>()(
  "@hostplane/core/hostnames/HostnamesConfig"
) {
  static readonly make = (overrides: Partial<HostnamesConfigShape> = {}) =>
    Layer.effect(
      HostnamesConfig,
      Effect.map(Effect.service(Settings), (settings) => ({
        fallbackOrigin: `fallback.${settings.appDomain}`,
        dnsNameservers: ["ns1.hostplane.localhost", "ns2.hostplane.localhost"],
        ...overrides
      }))
    )

  /** `SERVICE_FALLBACK_ORIGIN`, `SERVICE_DNS_NAMESERVERS`. */
  static readonly layerConfig = Layer.unwrap(
    Effect.gen(function* () {
      const env = yield* Config.all({
        fallbackOrigin: optionalSetting("SERVICE_FALLBACK_ORIGIN"),
        dnsNameservers: optionalSetting("SERVICE_DNS_NAMESERVERS")
      })
      const overrides: { -readonly [K in keyof HostnamesConfigShape]?: HostnamesConfigShape[K] } = {}
      if (env.fallbackOrigin._tag === "Some") overrides.fallbackOrigin = env.fallbackOrigin.value
      if (env.dnsNameservers._tag === "Some") overrides.dnsNameservers = settingList(env.dnsNameservers.value)
      return HostnamesConfig.make(overrides)
    })
  )
}
