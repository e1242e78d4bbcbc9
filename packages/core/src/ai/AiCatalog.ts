import { Context, Effect, Layer } from "effect"
import { AiConfig } from "./AiConfig.ts"
import { type CatalogEntry, type ModelEntry, toModelEntry } from "./AiModel.ts"

/** The callable models: nothing outside the catalog reaches the upstream (spec 4.10: no arbitrary pass-through). */
export class AiCatalog extends Context.Service<
  AiCatalog,
  {
    readonly models: ReadonlyArray<ModelEntry>
    readonly find: (id: string) => CatalogEntry | undefined
  }
>()("@hostplane/core/ai/AiCatalog") {
  static readonly layer = Layer.effect(
    AiCatalog,
    Effect.map(Effect.service(AiConfig), (config) => {
      const byId = new Map(config.catalog.map((entry) => [entry.id, entry]))
      return AiCatalog.of({ models: config.catalog.map(toModelEntry), find: (id) => byId.get(id) })
    })
  )
}
