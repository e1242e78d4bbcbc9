import { Schema } from "effect"

/** A catalog entry as the API shows it (decisions.md part 4). Prices are integer micro-cents per 1,000,000 tokens. */
export const ModelEntry = Schema.Struct({
  id: Schema.String,
  lane: Schema.Literals(["frontier", "value"]),
  provider: Schema.optionalKey(Schema.String),
  listPrice: Schema.Boolean,
  inputMicroCentsPerMTok: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  outputMicroCentsPerMTok: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  contextTokens: Schema.Int.check(Schema.isGreaterThan(0))
})
export type ModelEntry = typeof ModelEntry.Type

/**
 * A catalog entry with the model name the upstream knows it by (never shown). Spec part 2: a `frontier` entry is sold
 * at list price (`listPrice: true`) under the upstream's own name (its id is `upstreamModel`) and names its
 * `provider`; a `value` entry names no provider.
 */
export const CatalogEntry = Schema.Struct({ ...ModelEntry.fields, upstreamModel: Schema.String }).check(
  Schema.makeFilter((entry) =>
    entry.lane === "frontier"
      ? (entry.listPrice && entry.provider !== undefined && entry.upstreamModel === entry.id) ||
        "a frontier entry has listPrice true, a provider, and its id is its upstreamModel"
      : entry.provider === undefined || "a value entry has no provider"
  )
)
export type CatalogEntry = typeof CatalogEntry.Type

/** The catalog file of `SERVICE_AI_CATALOG`: an array of entries with unique ids. */
export const Catalog = Schema.Array(CatalogEntry).check(
  Schema.makeFilter(
    (entries) => new Set(entries.map((entry) => entry.id)).size === entries.length || "model ids must be unique"
  )
)

export const toModelEntry = ({ upstreamModel: _, ...entry }: CatalogEntry): ModelEntry => entry

/**
 * The catalog shipped with the product. Frontier models are sold at the provider's list price (zero margin) under
 * the upstream's own name; value models are hostplane's names for cheaper upstream models.
 */
export const defaultCatalog: ReadonlyArray<CatalogEntry> = [
  {
    id: "gpt-4.1",
    lane: "frontier",
    provider: "openai",
    listPrice: true,
    inputMicroCentsPerMTok: 200_000_000,
    outputMicroCentsPerMTok: 800_000_000,
    contextTokens: 1_047_576,
    upstreamModel: "gpt-4.1"
  },
  {
    id: "gpt-4.1-mini",
    lane: "frontier",
    provider: "openai",
    listPrice: true,
    inputMicroCentsPerMTok: 40_000_000,
    outputMicroCentsPerMTok: 160_000_000,
    contextTokens: 1_047_576,
    upstreamModel: "gpt-4.1-mini"
  },
  {
    id: "value-chat",
    lane: "value",
    listPrice: false,
    inputMicroCentsPerMTok: 15_000_000,
    outputMicroCentsPerMTok: 60_000_000,
    contextTokens: 1_047_576,
    upstreamModel: "gpt-4.1-nano"
  }
]

/** Decisions.md part 4: `ceil((in × inPrice + out × outPrice) / 1,000,000)` micro-cents, exactly (BigInt). */
export const costOf = (entry: ModelEntry, inputTokens: number, outputTokens: number): number => {
  const total =
    BigInt(inputTokens) * BigInt(entry.inputMicroCentsPerMTok) +
    BigInt(outputTokens) * BigInt(entry.outputMicroCentsPerMTok)
  return Number((total + 999_999n) / 1_000_000n)
}
