import { Config, Context, Duration, Effect, FileSystem, Layer, Option, type Redacted, Schema } from "effect"
import { optionalSetting } from "../kernel/Settings.ts"
import { Catalog, type CatalogEntry, defaultCatalog } from "./AiModel.ts"

/** The AI upstream settings of decisions.md part 7. */
export interface AiConfigShape {
  readonly catalog: ReadonlyArray<CatalogEntry>
  /** `SERVICE_AI_UPSTREAM_URL`: the OpenAI-compatible base (`{base}/chat/completions`). */
  readonly upstreamUrl: Option.Option<string>
  /** `SERVICE_AI_UPSTREAM_KEY`: without it (or the URL) calls answer 503 `ai_unavailable`. */
  readonly upstreamKey: Option.Option<Redacted.Redacted<string>>
  /**
   * `SERVICE_AI_SWEEP_EVERY`: how often the sweep charges the calls a gateway process left pending when it died, so
   * such a call is charged within about that long of a runner noticing the process gone.
   */
  readonly sweepEvery: Duration.Duration
}

/** The AI call sweep's round unless `SERVICE_AI_SWEEP_EVERY` says otherwise. */
export const defaultSweepEvery = Duration.seconds(15)

/** AI settings: the catalog (built in, or the JSON file `SERVICE_AI_CATALOG`) and the upstream's URL and key. */
export class AiConfig extends Context.Service<AiConfig, AiConfigShape>()("@hostplane/core/ai/AiConfig") {
  static readonly make = (overrides: Partial<AiConfigShape> = {}) =>
    Layer.succeed(AiConfig, {
      catalog: defaultCatalog,
      upstreamUrl: Option.none(),
      upstreamKey: Option.none(),
      sweepEvery: defaultSweepEvery,
      ...overrides
    })

  /**
   * `SERVICE_AI_CATALOG` (a JSON file, read at start through the host's `FileSystem`; a bad file stops the start),
   * `SERVICE_AI_UPSTREAM_URL`, `SERVICE_AI_UPSTREAM_KEY`, `SERVICE_AI_SWEEP_EVERY`.
   */
  static readonly layerConfig = Layer.effect(
    AiConfig,
    Effect.gen(function* () {
      const env = yield* Config.all({
        catalog: optionalSetting("SERVICE_AI_CATALOG"),
        upstreamUrl: optionalSetting("SERVICE_AI_UPSTREAM_URL"),
        upstreamKey: Config.option(Config.Redacted("SERVICE_AI_UPSTREAM_KEY")),
        sweepEvery: Config.Duration("SERVICE_AI_SWEEP_EVERY").pipe(Config.withDefault(Duration.seconds(15)))
      })
      const path = Option.filter(env.catalog, (value) => value.trim() !== "")
      const catalog = Option.isNone(path)
        ? defaultCatalog
        : yield* Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => fs.readFileString(path.value)).pipe(
            Effect.flatMap(Schema.decodeUnknownEffect(Schema.fromJsonString(Catalog))),
            Effect.orDie
          )
      return {
        catalog,
        upstreamUrl: Option.filter(env.upstreamUrl, (value) => value.trim() !== ""),
        upstreamKey: env.upstreamKey,
        sweepEvery: env.sweepEvery
      }
    })
  )
}
