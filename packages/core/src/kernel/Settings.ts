import { Config, ConfigProvider, Context, Effect, Layer, Schema } from "effect"
import { defaultPlanTable, type PlanTable, PlanTableOverride, planTableWith } from "./PlanLimits.ts"

/**
 * The settings of decisions.md part 2 that several areas share: the product's name, its public URL, its own
 * domains and the per-plan numbers (part 15's `SERVICE_PLAN_LIMITS`). Every other setting belongs to the one area that reads it (`IdentityConfig`, `HostnamesConfig`,
 * `MailConfig`, `InvitesConfig`), so a new area adds its own config instead of joining this one.
 */
export interface SettingsShape {
  readonly productName: string
  readonly publicUrl: string
  readonly appDomain: string
  /** Always holds the app domain. */
  readonly serviceDomains: ReadonlyArray<string>
  /** Where a browser opens a project's hostname: a URL in which `{host}` stands for the hostname. */
  readonly siteUrl: string
  /** The numbers of decisions.md part 3 in force, by plan. */
  readonly planLimits: PlanTable
}

/** Splits a comma list setting, dropping empty items. */
export const settingList = (value: string): ReadonlyArray<string> =>
  value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0)

/** An optional string setting. */
export const optionalSetting = (name: string) => Config.option(Config.String(name))

/** Fills every setting the caller leaves out with the embedded default. */
export const makeSettings = (overrides: Partial<SettingsShape> = {}): SettingsShape => {
  const appDomain = overrides.appDomain ?? "apps.localhost"
  return {
    productName: overrides.productName ?? "hostplane",
    publicUrl: (overrides.publicUrl ?? "http://localhost:8080").replace(/\/+$/, ""),
    appDomain,
    // The app domain is always one of the service's own domains, whatever the setting lists.
    serviceDomains: [...new Set([appDomain, ...(overrides.serviceDomains ?? [])])],
    siteUrl: overrides.siteUrl ?? "https://{host}/",
    planLimits: overrides.planLimits ?? defaultPlanTable
  }
}

/** `SERVICE_PLAN_LIMITS` decoded: a misspelt plan or field stops the start with the setting's name. */
const planLimitsSetting = (text: string) =>
  Schema.decodeUnknownEffect(Schema.fromJsonString(PlanTableOverride))(text, { onExcessProperty: "error" }).pipe(
    Effect.map(planTableWith),
    Effect.mapError(
      (error) =>
        new Config.ConfigError(
          new ConfigProvider.SourceError({
            message: `SERVICE_PLAN_LIMITS must be a JSON object of plans (free, pro) with PlanLimits' field names and whole numbers from 0: ${error.message}`
          })
        )
    )
  )

/** Settings shared by every area of the running deployment. */
export class Settings extends Context.Service<Settings, SettingsShape>()("@hostplane/core/kernel/Settings") {
  static readonly make = (overrides: Partial<SettingsShape> = {}) => Layer.succeed(Settings, makeSettings(overrides))

  /**
   * `SERVICE_PRODUCT_NAME`, `SERVICE_PUBLIC_URL`, `SERVICE_APP_DOMAIN`, `SERVICE_DOMAINS`, `SERVICE_SITE_URL` (else
   * `siteUrlDefault`: the standalone server names its own edge), `SERVICE_PLAN_LIMITS`.
   */
  static readonly layerConfigWith = (options: { readonly siteUrlDefault?: string | undefined } = {}) =>
    Layer.effect(
      Settings,
      Effect.gen(function* () {
        const env = yield* Config.all({
          productName: optionalSetting("SERVICE_PRODUCT_NAME"),
          publicUrl: optionalSetting("SERVICE_PUBLIC_URL"),
          appDomain: optionalSetting("SERVICE_APP_DOMAIN"),
          serviceDomains: optionalSetting("SERVICE_DOMAINS"),
          siteUrl: optionalSetting("SERVICE_SITE_URL"),
          planLimits: optionalSetting("SERVICE_PLAN_LIMITS")
        })
        const overrides: { -readonly [K in keyof SettingsShape]?: SettingsShape[K] } = {}
        if (env.productName._tag === "Some") overrides.productName = env.productName.value
        if (env.publicUrl._tag === "Some") overrides.publicUrl = env.publicUrl.value
        if (env.appDomain._tag === "Some") overrides.appDomain = env.appDomain.value.toLowerCase()
        if (env.serviceDomains._tag === "Some") {
          overrides.serviceDomains = settingList(env.serviceDomains.value.toLowerCase())
        }
        const siteUrl = env.siteUrl._tag === "Some" ? env.siteUrl.value : options.siteUrlDefault
        if (siteUrl !== undefined) overrides.siteUrl = siteUrl
        if (env.planLimits._tag === "Some") overrides.planLimits = yield* planLimitsSetting(env.planLimits.value)
        return makeSettings(overrides)
      })
    )

  static readonly layerConfig = Settings.layerConfigWith()
}
