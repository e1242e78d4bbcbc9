import { withRules } from "../auth/Rules.ts"
import { aiCreditRules } from "@hostplane/core/ai/AiCreditRules"
import { Ai, Errors, Kernel } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { addonGroup } from "../addons/AddonApi.ts"
import { Authentication } from "../auth/Authentication.ts"
import { apiErrors } from "../errors/ApiError.ts"
import { OrgRef } from "../projects/ProjectRef.ts"

const describe = (description: string) => OpenApi.annotations({ description })

const tiers = Ai.creditTiers.join(", ")

/** Spec 4.10: the model catalog and an org's prepaid credit, ledger, credit checkout and auto top-up. */
export class AiCreditApi extends withRules(
  HttpApiGroup.make("aiCredit")
    .add(
      HttpApiEndpoint.get("models", "/ai/models", {
        success: Schema.Struct({ items: Schema.Array(Ai.ModelEntry) })
      })
        .annotate(OpenApi.Summary, "List the AI models")
        .annotateMerge(
          describe(
            [
              "Signed in. The full catalog of callable models: `frontier` entries (`listPrice: true`, the provider's own",
              "model id, `provider`) and `value` entries. Prices are integer micro-cents per 1,000,000 tokens (1",
              "micro-cent = 1e-8 USD). A model outside the catalog is refused at call time (400 `unknown_model`)."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.get("credit", "/orgs/:orgSlug/ai/credit", {
        params: OrgRef,
        success: Ai.AICredit,
        error: apiErrors(Errors.NotFound, Errors.Forbidden)
      })
        .annotate(OpenApi.Summary, "Read the AI credit")
        .annotateMerge(
          describe(
            [
              "`balanceMicroCents` (may be negative: a call is charged after it answers),",
              "`hasPaymentMethod` (set by the first paid credit order), `autoTopup`, `autoTopupsToday` (UTC day) and",
              "`autoTopupPerDay` (3)."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.get("ledger", "/orgs/:orgSlug/ai/ledger", {
        params: OrgRef,
        query: {
          limit: Schema.optionalKey(Kernel.PageLimit),
          before: Schema.optionalKey(Schema.FiniteFromString.check(Schema.isInt(), Schema.isGreaterThan(0)))
        },
        success: Ai.LedgerPage,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest)
      })
        .annotate(OpenApi.Summary, "Read the AI ledger")
        .annotateMerge(
          describe(
            [
              "Newest first: `{ ledger_id, kind, amountMicroCents, projectName, model, createdAt }` with",
              "`kind` `call` (negative), `topup` (positive) or `adjust`. Query `limit` (1..200, default 50) and `before`",
              "(a `ledger_id`: rows before it); `nextCursor` is the `before` of the next page, null on the last."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.post("checkout", "/orgs/:orgSlug/ai/credit/checkout", {
        params: OrgRef,
        payload: Ai.CreditCheckoutInput,
        success: Schema.Struct({ url: Schema.String }),
        error: apiErrors(
          Errors.NotFound,
          Errors.Forbidden,
          Errors.BadRequest,
          Errors.BillingOff,
          Errors.BillingUnavailable
        )
      })
        .annotate(OpenApi.Summary, "Buy AI credit")
        .annotateMerge(
          describe(
            [
              `Body \`{ microCents, returnTo }\`: \`microCents\` one of ${tiers}; \`returnTo\` under`,
              "`SERVICE_PUBLIC_URL` (else 400, checked before anything else). Answers an embeddable checkout `url`. The",
              "balance rises only when the provider's `order.paid` webhook arrives. No credit product: 501 `billing_off`;",
              "provider failure: 502 `billing_unavailable`."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.put("autotopup", "/orgs/:orgSlug/ai/autotopup", {
        params: OrgRef,
        payload: Ai.AutoTopupInput,
        success: [Ai.AICredit, HttpApiSchema.NoContent],
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest, Errors.NoPaymentMethod)
      })
        .annotate(OpenApi.Summary, "Turn AI auto top-up on or off")
        .annotateMerge(
          describe(
            [
              "Body `{ enabled, amountMicroCents?, thresholdMicroCents? }`; enabling is explicit consent to charge",
              `the stored payment method. Enabling needs \`amountMicroCents\` in the tiers (${tiers}) and`,
              "`thresholdMicroCents` above 0 and below the amount (else 400), and a stored payment method (409",
              "`no_payment_method`: the first top-up is a manual checkout). 200 AICredit when turned on, 204 when off.",
              "Audit `ai.autotopup.on` or `ai.autotopup.off`."
            ].join(" ")
          )
        )
    )
    .middleware(Authentication)
    .annotateMerge(OpenApi.annotations({ title: "AI", description: "AI models and prepaid credit (spec 4.10)." })),
  aiCreditRules
) {}

/** The OpenAI chat-completions request as documented; the gateway reads the raw body itself (decisions.md part 12). */
const ChatCompletionRequest = Schema.Struct({
  model: Schema.String.annotate({ description: "A catalog id (`GET /v1/ai/models`)." }),
  messages: Schema.Array(Schema.Record(Schema.String, Schema.Unknown)),
  stream: Schema.optionalKey(Schema.Boolean),
  max_tokens: Schema.optionalKey(Schema.Number),
  max_completion_tokens: Schema.optionalKey(Schema.Number),
  stream_options: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
}).annotate({ identifier: "ChatCompletionRequest" })

/** decisions.md part 6: the AI gateway, authorized by a project's AI key rather than a session. */
export class AiGatewayApi extends HttpApiGroup.make("aiGateway")
  .add(
    HttpApiEndpoint.post("chat", "/ai/chat/completions", {
      headers: {
        authorization: Schema.optionalKey(Schema.String.annotate({ description: "`Bearer <project AI key>`." }))
      },
      payload: ChatCompletionRequest,
      success: Schema.Record(Schema.String, Schema.Unknown).annotate({
        description: "The upstream's chat completion (or, for `stream: true`, `text/event-stream` chunks)."
      }),
      error: apiErrors(...Ai.gatewayErrors)
    })
      .annotate(OpenApi.Summary, "Call an AI model (OpenAI chat completions)")
      .annotateMerge(
        describe(
          [
            "`Authorization: Bearer <project AI key>` (the node's `ai` binding `{ key }`); the OpenAI chat-completions",
            "request shape. Checked in this order: the key (401: AI not granted or the key revoked); the body and the",
            "model (400 `bad_request`, 400 `unknown_model` for a model outside the catalog); the plan's limits (400",
            "for `max_tokens`/`max_completion_tokens` above `maxOutputTokens` or an input above `maxInputTokens`, counted",
            "as 4 characters a token; 429 `rate_limited` past `requestsPerMinute` calls of the project in the last 60",
            "seconds; 402 `daily_limit` once the org's calls of the last 24 hours cost `dailySpendMicroCents`); the",
            "balance (402 `insufficient_balance` at or below 0); the upstream (503 `ai_unavailable` without",
            "credentials). Then the call goes upstream under the catalog's upstream model, with the plan's",
            "`maxOutputTokens` as `max_tokens` when none is set; `stream: true` answers server-sent events as they",
            "arrive. Each call is charged once, after the answer, from the upstream's `usage` at the catalog price:",
            "one `call` ledger row of `ceil((in × inPrice + out × outPrice) / 1,000,000)` micro-cents (the balance may",
            "go negative). A caller that disconnects mid-stream is still charged: the upstream is read to its end.",
            "Upstream refusals: 400 (the upstream's 400/413/422), 429 (its 429), else 502 `ai_upstream_error`."
          ].join(" ")
        )
      )
  )
  .annotateMerge(
    OpenApi.annotations({ title: "AI gateway", description: "The AI gateway nodes call (decisions.md part 6)." })
  ) {}

/** Spec 4.10's add-on endpoints: status (viewer), grant (member), revoke (admin), on the add-on scaffold. */
export const AiAddonApi = addonGroup(Ai.aiAddon)
