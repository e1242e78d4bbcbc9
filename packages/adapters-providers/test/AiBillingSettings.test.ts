import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { AiUpstreamOpenAi, PaymentGatewayPolar } from "@hostplane/adapters-providers"
import { Ai, Billing, Kernel } from "@hostplane/core"
import { ConfigProvider, Effect, Exit, Layer, Option, Redacted, Schema } from "effect"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"

/** The AI settings of decisions.md part 7 as the server reads them: the environment, and files through Node's. */
const aiConfig = (env: Record<string, string>) =>
  Effect.service(Ai.AiConfig).pipe(
    Effect.provide(
      Ai.AiConfig.layerConfig.pipe(
        Layer.provide(Layer.merge(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)), NodeFileSystem.layer))
      )
    )
  )

/** A catalog file in a fresh temporary folder, removed with the scope. */
const catalogFile = (content: unknown) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const dir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-ai-catalog-"))
      const file = Path.join(dir, "catalog.json")
      await Fs.writeFile(file, typeof content === "string" ? content : JSON.stringify(content))
      return { dir, file }
    }),
    ({ dir }) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
  ).pipe(Effect.map(({ file }) => file))

const frontier: Ai.CatalogEntry = {
  id: "claude-sonnet-4",
  lane: "frontier",
  provider: "anthropic",
  listPrice: true,
  inputMicroCentsPerMTok: 300_000_000,
  outputMicroCentsPerMTok: 1_500_000_000,
  contextTokens: 200_000,
  upstreamModel: "claude-sonnet-4"
}
const value: Ai.CatalogEntry = {
  id: "house-small",
  lane: "value",
  listPrice: false,
  inputMicroCentsPerMTok: 10_000_000,
  outputMicroCentsPerMTok: 30_000_000,
  contextTokens: 128_000,
  upstreamModel: "llama-3.1-8b-instruct"
}

describe("SERVICE_AI_CATALOG, SERVICE_AI_UPSTREAM_URL, SERVICE_AI_UPSTREAM_KEY", () => {
  it.effect("unset (or blank): the built-in catalog and no upstream, so calls answer 503 ai_unavailable", () =>
    Effect.gen(function* () {
      for (const env of [{}, { SERVICE_AI_CATALOG: " ", SERVICE_AI_UPSTREAM_URL: "" }]) {
        const config = yield* aiConfig(env)
        assert.deepStrictEqual(config.catalog, Ai.defaultCatalog)
        assert.isTrue(Option.isNone(config.upstreamUrl))
        assert.isTrue(Option.isNone(config.upstreamKey))
      }
      // The built-in catalog obeys the rules a file is held to.
      const builtIn = Schema.decodeUnknownEffect(Schema.fromJsonString(Ai.Catalog))(JSON.stringify(Ai.defaultCatalog))
      assert.isTrue(Exit.isSuccess(yield* Effect.exit(builtIn)))
    })
  )

  it.effect("a catalog file is read at start: its entries replace the built-in ones; the upstream URL and key", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const file = yield* catalogFile([frontier, value])
        const config = yield* aiConfig({
          SERVICE_AI_CATALOG: file,
          SERVICE_AI_UPSTREAM_URL: "https://llm.example.test/v1",
          SERVICE_AI_UPSTREAM_KEY: "sk-test"
        })
        assert.deepStrictEqual(config.catalog, [frontier, value])
        assert.deepStrictEqual(config.upstreamUrl, Option.some("https://llm.example.test/v1"))
        assert.strictEqual(Redacted.value(Option.getOrThrow(config.upstreamKey)), "sk-test")
      })
    )
  )

  it.effect("a file breaking the catalog's rules, or no catalog at all, stops the start", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { provider: _, ...noProvider } = frontier
        for (const [why, content] of [
          ["a frontier entry without provider", [noProvider]],
          ["a frontier entry not at list price", [{ ...frontier, listPrice: false }]],
          ["a frontier entry under another upstream name", [{ ...frontier, upstreamModel: "claude-sonnet-4-0514" }]],
          ["a value entry with a provider", [{ ...value, provider: "meta" }]],
          ["a model id twice", [value, { ...value, upstreamModel: "other" }]],
          ["a price that is no integer", [{ ...value, inputMicroCentsPerMTok: 1.5 }]],
          ["a negative price", [{ ...value, outputMicroCentsPerMTok: -1 }]],
          ["an unknown lane", [{ ...value, lane: "cheap" }]],
          ["no upstreamModel", [{ ...value, upstreamModel: undefined }]],
          ["not JSON", "[{"],
          ["not an array", { models: [value] }]
        ] as const) {
          const file = yield* catalogFile(content)
          const exit = yield* Effect.exit(aiConfig({ SERVICE_AI_CATALOG: file }))
          assert.deepStrictEqual({ why, failed: Exit.isFailure(exit) }, { why, failed: true })
        }
        const missing = yield* Effect.exit(aiConfig({ SERVICE_AI_CATALOG: "/nonexistent/hostplane/catalog.json" }))
        assert.isTrue(Exit.isFailure(missing))
      })
    )
  )

  it.effect("AiUpstreamOpenAi.layerConfig provides the upstream only when both the URL and the key are set", () =>
    Effect.gen(function* () {
      const upstreamWith = (env: Record<string, string>) =>
        Effect.map(Effect.service(Ai.AiUpstream), Kernel.portOn).pipe(
          Effect.provide(AiUpstreamOpenAi.layerConfig.pipe(Layer.provideMerge(Ai.AiConfig.layerConfig))),
          Effect.provide(Layer.merge(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)), NodeFileSystem.layer))
        )
      const url = "http://127.0.0.1:9/v1"
      assert.isTrue(Option.isSome(yield* upstreamWith({ SERVICE_AI_UPSTREAM_URL: url, SERVICE_AI_UPSTREAM_KEY: "k" })))
      assert.isTrue(Option.isNone(yield* upstreamWith({ SERVICE_AI_UPSTREAM_URL: url })))
      assert.isTrue(Option.isNone(yield* upstreamWith({ SERVICE_AI_UPSTREAM_KEY: "k" })))
    })
  )
})

describe("SERVICE_POLAR_*", () => {
  // `off` when no token is set: the gateway is always provided, so "none" is its off form.
  const gatewayWith = (env: Record<string, string>) =>
    Effect.map(Effect.service(Billing.PaymentGateway), Kernel.portOn).pipe(
      Effect.provide(PaymentGatewayPolar.layerConfig),
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)))
    )

  it.effect("no token: no payment gateway (billing off: 501 billing_off)", () =>
    Effect.gen(function* () {
      const gateway = yield* gatewayWith({ SERVICE_POLAR_PRO_PRODUCT: "prod_pro", SERVICE_POLAR_TOKEN: " " })
      assert.isTrue(Option.isNone(gateway))
    })
  )

  it.effect("a token: plans need the Pro product, credit the credit product; a URL containing sandbox is sandbox", () =>
    Effect.gen(function* () {
      const statusOf = (env: Record<string, string>) =>
        Effect.map(gatewayWith({ SERVICE_POLAR_TOKEN: "polar_oat_x", ...env }), (g) => Option.getOrThrow(g).status)
      assert.deepStrictEqual(yield* statusOf({}), { plans: false, credit: false, sandbox: false })
      assert.deepStrictEqual(
        yield* statusOf({ SERVICE_POLAR_PRO_PRODUCT: "prod_pro", SERVICE_POLAR_CREDIT_PRODUCT: "prod_credit" }),
        { plans: true, credit: true, sandbox: false }
      )
      assert.deepStrictEqual(
        yield* statusOf({ SERVICE_POLAR_URL: "https://sandbox-api.polar.sh", SERVICE_POLAR_PRO_PRODUCT: "prod_pro" }),
        { plans: true, credit: false, sandbox: true }
      )
    })
  )
})
