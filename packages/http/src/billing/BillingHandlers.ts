import { Billing, Kernel } from "@hostplane/core"
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { noStore } from "@hostplane/api/server/NoStore"
import { BillingApi, BillingHooksApi } from "@hostplane/api/billing/BillingApi"

const api = areaApi(BillingHooksApi, BillingApi)

const actor = Effect.service(Kernel.CurrentActor)

const hooks = HttpApiBuilder.group(
  api,
  "billingHooks",
  Effect.fn(function* (handlers) {
    const billing = yield* Billing.Billings
    return handlers.handle("webhook", ({ headers, payload }) =>
      billing.webhook({
        id: headers["webhook-id"],
        timestamp: headers["webhook-timestamp"],
        signature: headers["webhook-signature"],
        body: payload
      })
    )
  })
)

const endpoints = HttpApiBuilder.group(
  api,
  "billing",
  Effect.fn(function* (handlers) {
    const billing = yield* Billing.Billings
    return handlers.handleAll({
      status: ({ params }) => Effect.flatMap(actor, (a) => billing.status(a, params.orgSlug)),
      checkout: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => billing.checkout(a, params.orgSlug, payload.returnTo)),
      portal: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => billing.portal(a, params.orgSlug, payload.returnTo)).pipe(Effect.map(noStore)),
      session: ({ params }) =>
        Effect.flatMap(actor, (a) => billing.session(a, params.orgSlug)).pipe(Effect.map(noStore)),
      cancel: ({ params, payload }) => Effect.flatMap(actor, (a) => billing.cancel(a, params.orgSlug, payload.cancel))
    })
  })
)

export const BillingHandlers = Layer.merge(hooks, endpoints)
