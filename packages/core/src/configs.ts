import { Layer } from "effect"
import {
  type ConfigsOf,
  type OverridesOf,
  type SettingsErrorOf,
  settingsFromEnv,
  settingsLayer,
  type SettingsNeedsOf,
  type SettingsOf,
  type SettingsOptions
} from "./Area.ts"
import { areas } from "./areas.ts"
import { NodeConfig } from "./node/NodeConfig.ts"
import { Settings, type SettingsShape } from "./kernel/Settings.ts"

/** The settings every area of core declares (its `settings` field). */
type AreasSettings = SettingsOf<(typeof areas)[number]>

/**
 * Every area's config: the shared `Settings`, the node API's (`Nodes` is built after the areas) and the one service
 * per area that reads its own settings.
 */
export type Configs = Settings | NodeConfig | ConfigsOf<AreasSettings>

/** Explicit values for `configLayer`, by area (each area's settings `key`); anything left out takes its default. */
export type ConfigOverrides = {
  readonly settings?: Partial<SettingsShape>
  readonly node?: { readonly token?: string | undefined }
} & OverridesOf<AreasSettings>

/** Every area's config from explicit values (tests, embedding hosts), each area's `make`. */
export const configLayer = (overrides: ConfigOverrides = {}): Layer.Layer<Configs> =>
  Layer.mergeAll(NodeConfig.make(overrides.node), ...settingsLayer(areas, overrides)).pipe(
    Layer.provideMerge(Settings.make(overrides.settings))
  ) as Layer.Layer<Configs>

/** Every area's config from the `SERVICE_*` environment, each area's `fromEnv`. */
export const configLayerFromEnv = (
  options: SettingsOptions
): Layer.Layer<
  Configs,
  | SettingsErrorOf<AreasSettings>
  | Layer.Error<typeof NodeConfig.layerConfig>
  | Layer.Error<ReturnType<typeof Settings.layerConfigWith>>,
  | Exclude<SettingsNeedsOf<AreasSettings>, Configs>
  | Layer.Services<typeof NodeConfig.layerConfig>
  | Layer.Services<ReturnType<typeof Settings.layerConfigWith>>
> =>
  Layer.mergeAll(NodeConfig.layerConfig, ...settingsFromEnv(areas, options)).pipe(
    Layer.provideMerge(Settings.layerConfigWith({ siteUrlDefault: options.siteUrlDefault }))
  )
