import { Layer } from "effect"
import { AiConfig, type AiConfigShape } from "./ai/AiConfig.ts"
import { BillingConfig, type BillingConfigShape } from "./billing/BillingConfig.ts"
import { DnsConfig, type DnsConfigShape } from "./dns/DnsConfig.ts"
import { GitConfig, type GitConfigShape } from "./git/GitConfig.ts"
import { DatabaseConfig, type DatabaseConfigShape } from "./database/DatabaseConfig.ts"
import { NodeConfig } from "./node/NodeConfig.ts"
import { HostnamesConfig, type HostnamesConfigShape } from "./hostnames/HostnamesConfig.ts"
import { IdentityConfig, type IdentityConfigShape } from "./identity/IdentityConfig.ts"
import { Settings, type SettingsShape } from "./kernel/Settings.ts"
import { MailConfig, type MailConfigShape } from "./mail/MailConfig.ts"
import { InvitesConfig, type InvitesConfigShape } from "./orgs/InvitesConfig.ts"
import { LogsConfig, type LogsConfigShape } from "./logs/LogsConfig.ts"

/** Every area's config: the shared `Settings` and the one service per area that reads its own settings. */
export type Configs =
  | Settings
  | IdentityConfig
  | HostnamesConfig
  | MailConfig
  | InvitesConfig
  | BillingConfig
  | DnsConfig
  | AiConfig
  | GitConfig
  | DatabaseConfig
  | NodeConfig
  | LogsConfig

/** Explicit values for `configLayer`, by area; anything left out takes its default. */
export interface ConfigOverrides {
  readonly settings?: Partial<SettingsShape>
  readonly identity?: Partial<IdentityConfigShape>
  readonly hostnames?: Partial<HostnamesConfigShape>
  readonly mail?: Partial<MailConfigShape>
  readonly invites?: Partial<InvitesConfigShape>
  readonly billing?: Partial<BillingConfigShape>
  readonly dns?: Partial<DnsConfigShape>
  readonly ai?: Partial<AiConfigShape>
  readonly git?: Partial<GitConfigShape>
  readonly database?: Partial<DatabaseConfigShape>
  readonly node?: { readonly token?: string | undefined }
  readonly logs?: Partial<LogsConfigShape>
}

/** Every area's config from explicit values (tests, embedding hosts), each area's `make`. */
export const configLayer = (overrides: ConfigOverrides = {}): Layer.Layer<Configs> =>
  Layer.mergeAll(
    IdentityConfig.make(overrides.identity),
    HostnamesConfig.make(overrides.hostnames),
    MailConfig.make(overrides.mail),
    InvitesConfig.make(overrides.invites),
    BillingConfig.make(overrides.billing),
    DnsConfig.make(overrides.dns),
    AiConfig.make(overrides.ai),
    GitConfig.make(overrides.git),
    DatabaseConfig.make(overrides.database),
    NodeConfig.make(overrides.node),
    LogsConfig.make(overrides.logs)
  ).pipe(Layer.provideMerge(Settings.make(overrides.settings)))

/** Every area's config from the `SERVICE_*` environment, each area's `layerConfig`. */
export const configLayerFromEnv = (options: {
  readonly devAuthDefault: boolean
  /** `SERVICE_SITE_URL` when unset (the standalone server: its own edge). */
  readonly siteUrlDefault?: string | undefined
}) =>
  Layer.mergeAll(
    IdentityConfig.layerConfig(options),
    HostnamesConfig.layerConfig,
    MailConfig.layerConfig,
    InvitesConfig.layerConfig,
    BillingConfig.layerConfig,
    DnsConfig.layerConfig,
    AiConfig.layerConfig,
    GitConfig.layerConfig,
    DatabaseConfig.layerConfig,
    NodeConfig.layerConfig,
    LogsConfig.layerConfig
  ).pipe(Layer.provideMerge(Settings.layerConfigWith({ siteUrlDefault: options.siteUrlDefault })))
