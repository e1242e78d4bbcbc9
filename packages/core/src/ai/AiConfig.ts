import { Config, Context, Effect, FileSystem, Layer, Option, type Redacted, Schema } from "effect"
import { optionalSetting } from "../kernel/Settings.ts"
import { Catalog, type CatalogEntry, defaultCatalog } from "./AiModel.ts"

/** The AI upstream settings of decisions.md part 7. */
export interface AiConfigShape {
  readonly catalog: ReadonlyArray<CatalogEntry>
  /** `SERVICE_AI_UPSTREAM_URL`: the OpenAI-compatible base (`{base}/chat/completions`). */
  readonly upstreamUrl: Option.Option<string>
  /** `SERVICE_AI_UPSTREAM_KEY`: without it (or the URL) calls answer 503 `ai_unavailable`. */
  readonly upstreamKey: Option.Option<Redacted.Redacted<string>>
}

/** AI settings: the catalog (built in, or the JSON file `SERVICE_AI_CATALOG`) and the upstream's URL and key. */
export class AiConfig extends Context.Service<AiConfig, AiConfigShape>()("@hostplane/core/ai/AiConfig") {
  static readonly make = (overrides: Partial<AiConfigShape> = {}) =>
    Layer.succeed(AiConfig, {
      catalog: defaultCatalog,
      upstreamUrl: Option.none(),
      upstreamKey: Option.none(),
      ...overrides
    })

  /**
   * `SERVICE_AI_CATALOG` (a JSON file, read at start through the host's `FileSystem`; a bad file stops the start),
   * `SERVICE_AI_UPSTREAM_URL`, `SERVICE_AI_UPSTREAM_KEY`.
   */
  static readonly layerConfig = Layer.effect(
    AiConfig,
    Effect.gen(function* () {
      const env = yield* Config.all({
        catalog: optionalSetting("SERVICE_AI_CATALOG"),
        upstreamUrl: optionalSetting("SERVICE_AI_UPSTREAM_URL"),
        upstreamKey: Config.option(Config.Redacted("SERVICE_AI_UPSTREAM_KEY"))
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
        upstreamKey: env.upstreamKey
      }
    })
  )
}
