import { Config, Context, Effect, Layer } from "effect"
import { optionalSetting, settingList } from "../kernel/Settings.ts"

/** The DNS settings of decisions.md parts 5, 9 and 10. */
export interface DnsConfigShape {
  /** `SERVICE_DNS_LISTEN`: the name server's UDP and TCP address; `off` turns the DNS area off (503). */
  readonly listen: string
  /** IPs allowed to AXFR the zones; none by default. */
  readonly transferAllow: ReadonlyArray<string>
  /** `ip[:port]` targets of NOTIFY after each change (port 53 by default). */
  readonly notify: ReadonlyArray<string>
}

/** DNS settings; the zones API answers 503 `dns_not_configured` when `listen` is `off`. */
export class DnsConfig extends Context.Service<DnsConfig, DnsConfigShape>()("@hostplane/core/dns/DnsConfig") {
  static readonly make = (overrides: Partial<DnsConfigShape> = {}) =>
    Layer.succeed(DnsConfig, { listen: "127.0.0.1:5353", transferAllow: [], notify: [], ...overrides })

  /** `SERVICE_DNS_LISTEN`, `SERVICE_DNS_TRANSFER_ALLOW`, `SERVICE_DNS_NOTIFY`. */
  static readonly layerConfig = Layer.unwrap(
    Effect.gen(function* () {
      const env = yield* Config.all({
        listen: optionalSetting("SERVICE_DNS_LISTEN"),
        transferAllow: optionalSetting("SERVICE_DNS_TRANSFER_ALLOW"),
        notify: optionalSetting("SERVICE_DNS_NOTIFY")
      })
      const overrides: { -readonly [K in keyof DnsConfigShape]?: DnsConfigShape[K] } = {}
      if (env.listen._tag === "Some" && env.listen.value.trim() !== "") overrides.listen = env.listen.value.trim()
      if (env.transferAllow._tag === "Some") overrides.transferAllow = settingList(env.transferAllow.value)
      if (env.notify._tag === "Some") overrides.notify = settingList(env.notify.value)
      return DnsConfig.make(overrides)
    })
  )
}

/** True unless `SERVICE_DNS_LISTEN=off`. */
export const dnsEnabled = (config: DnsConfigShape): boolean => config.listen.toLowerCase() !== "off"
