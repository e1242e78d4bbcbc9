import { Ai, Errors, Orgs } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../auth/Authentication.ts"
import { apiErrors } from "../errors/ApiError.ts"
import { OrgRef } from "../projects/ProjectRef.ts"

const describe = (description: string) => OpenApi.annotations({ description })

const tiers = Ai.creditTiers.join(", ")

/** Spec 4.10: the model catalog and an org's prepaid credit, ledger, credit checkout and auto top-up. */
export class AiCreditApi extends HttpApiGroup.make("aiCredit")
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
            "Member or higher. `balanceMicroCents` (may be negative: a call is charged after it answers),",
            "`hasPaymentMethod` (set by the first paid credit order), `autoTopup`, `autoTopupsToday` (UTC day) and",
            "`autoTopupPerDay` (3)."
          ].join(" ")
        )
      ),
    HttpApiEndpoint.get("ledger", "/orgs/:orgSlug/ai/ledger", {
      params: OrgRef,
      query: {
        limit: Schema.optionalKey(Orgs.PageLimit),
        before: Schema.optionalKey(Schema.FiniteFromString.check(Schema.isInt(), Schema.isGreaterThan(0)))
      },
      success: Ai.LedgerPage,
      error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest)
    })
      .annotate(OpenApi.Summary, "Read the AI ledger")
      .annotateMerge(
        describe(
          [
            "Member or higher. Newest first: `{ ledger_id, kind, amountMicroCents, projectName, model, createdAt }` with",
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
            `Admin. Body \`{ microCents, returnTo }\`: \`microCents\` one of ${tiers}; \`returnTo\` under`,
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
            "Admin. Body `{ enabled, amountMicroCents?, thresholdMicroCents? }`; enabling is explicit consent to charge",
            `the stored payment method. Enabling needs \`amountMicroCents\` in the tiers (${tiers}) and`,
            "`thresholdMicroCents` above 0 and below the amount (else 400), and a stored payment method (409",
            "`no_payment_method`: the first top-up is a manual checkout). 200 AICredit when turned on, 204 when off.",
            "Audit `ai.autotopup.on` or `ai.autotopup.off`."
          ].join(" ")
        )
      )
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({ title: "AI", description: "AI models and prepaid credit (spec 4.10)." })) {}
