import { withRules } from "../auth/Rules.ts"
import { billingRules } from "@hostplane/core/billing/BillingRules"
import { Billing, Errors } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../auth/Authentication.ts"
import { apiErrors } from "../errors/ApiError.ts"
import { OrgRef } from "../projects/ProjectRef.ts"
import { secretSuccess } from "../server/NoStore.ts"

const describe = (description: string) => OpenApi.annotations({ description })

const header = (description: string) => Schema.optionalKey(Schema.String.annotate({ description }))

const provider = [Errors.BillingOff, Errors.BillingUnavailable] as const

/** Spec 4.15: the payment provider's webhook; signed (Standard Webhooks), so no session. */
export class BillingHooksApi extends HttpApiGroup.make("billingHooks")
  .add(
    HttpApiEndpoint.post("webhook", "/hooks/billing", {
      headers: {
        "webhook-id": header("The delivery's id; a repeated id is acknowledged and ignored."),
        "webhook-timestamp": header("Unix seconds; within 5 minutes of the server's clock either way."),
        "webhook-signature": header("Space-separated `v1,<base64 HMAC-SHA256>` entries.")
      },
      // The raw text: the signature covers the exact bytes sent.
      payload: Schema.String.pipe(HttpApiSchema.asText({ contentType: "application/json" })),
      success: Billing.WebhookAnswer,
      error: apiErrors(Errors.BadRequest, Errors.Forbidden, Errors.BillingOff)
    })
      .annotate(OpenApi.Summary, "Receive a payment provider webhook")
      .annotateMerge(
        describe(
          [
            "Polar's webhook (`{ type, timestamp, data }`), signed per Standard Webhooks with",
            "`SERVICE_BILLING_WEBHOOK_SECRET` (HMAC key: the UTF-8 bytes of the whole secret, `whsec_` included, as",
            "Polar signs). Without the secret: 501 `billing_off`. A missing header, a timestamp more than 5 minutes away",
            "either way, or no matching signature: 403. A body that is not a JSON object with `type` and `data`: 400.",
            "`subscription.active` and `subscription.updated` set the plan (status active, trialing or past_due gives",
            "`pro`, any other `free`); `order.paid` with `metadata.kind` `ai_credit` raises the AI credit balance by",
            "`metadata.microCents` (a `topup` ledger row) and records the payment method. The org is",
            "`data.customer.external_id` (the org id), else `data.metadata.orgSlug`. 200 `{ applied }`: true only when",
            "the plan or the balance changed; a repeated `webhook-id` (whatever its body), an unknown org or an unknown",
            "type answer `applied: false`."
          ].join(" ")
        )
      )
  )
  .annotateMerge(
    OpenApi.annotations({ title: "Billing webhook", description: "Inbound payment events (spec 4.15)." })
  ) {}

/** Spec 4.15: an org's plan, checkout, portal, customer session and cancel. */
export class BillingApi extends withRules(
  HttpApiGroup.make("billing")
    .add(
      HttpApiEndpoint.get("status", "/orgs/:orgSlug/billing", {
        params: OrgRef,
        success: Billing.BillingStatus,
        error: apiErrors(Errors.NotFound, Errors.Forbidden)
      })
        .annotate(OpenApi.Summary, "Read the billing status")
        .annotateMerge(
          describe(
            [
              "`plan`; `status` (`active`, `past_due` or `canceled`; null when the org never had a",
              "subscription), `periodEnd`, `cancelAtPeriodEnd`; `enabled` false when billing is not configured, `sandbox`",
              "true in a test environment; `limits` holds both plans' numbers."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.post("checkout", "/orgs/:orgSlug/billing/checkout", {
        params: OrgRef,
        payload: Billing.CheckoutInput,
        success: Billing.UrlAnswer,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest, Errors.AlreadyPro, ...provider)
      })
        .annotate(OpenApi.Summary, "Start a Pro checkout")
        .annotateMerge(
          describe(
            [
              "Body `{ returnTo }`: an absolute URL whose origin is `SERVICE_PUBLIC_URL`'s and whose path is under",
              "its path, else 400. Answers the checkout's `url`. Paying does not change the plan: the webhook does.",
              "409 `already_pro`; 501 `billing_off`; 502 `billing_unavailable`."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.post("portal", "/orgs/:orgSlug/billing/portal", {
        params: OrgRef,
        payload: Billing.PortalInput,
        success: secretSuccess(Billing.UrlAnswer),
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest, ...provider)
      })
        .annotate(OpenApi.Summary, "Open the customer portal")
        .annotateMerge(
          describe(
            [
              "Body `{ returnTo? }` (the same rule as checkout). Answers a one-time portal `url`. An org that never",
              "paid: 404. 501 `billing_off`; 502 `billing_unavailable`."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.post("session", "/orgs/:orgSlug/billing/session", {
        params: OrgRef,
        success: secretSuccess(Billing.SessionAnswer),
        error: apiErrors(Errors.NotFound, Errors.Forbidden, ...provider)
      })
        .annotate(OpenApi.Summary, "Create a customer session")
        .annotateMerge(
          describe(
            [
              "No body. Answers the provider's customer session `{ token, expiresAt }` (valid 1 hour) for the org's",
              "customer. No billing history: 404. 501 `billing_off`; 502 `billing_unavailable`."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.post("cancel", "/orgs/:orgSlug/billing/cancel", {
        params: OrgRef,
        payload: Billing.CancelInput,
        success: Billing.CancelAnswer,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest, Errors.NotPro, ...provider)
      })
        .annotate(OpenApi.Summary, "Cancel or resume the Pro subscription")
        .annotateMerge(
          describe(
            [
              "Body `{ cancel }`: true ends Pro at the period end, false withdraws that. Nothing is revoked at once;",
              "the org's row updates now and the provider's webhook agrees later. Answers `{ status, cancelAtPeriodEnd,",
              "periodEnd }`. 409 `not_pro`; 501 `billing_off`; 502 `billing_unavailable`."
            ].join(" ")
          )
        )
    )
    .middleware(Authentication)
    .annotateMerge(OpenApi.annotations({ title: "Billing", description: "Plan billing (spec 4.15)." })),
  billingRules
) {}
