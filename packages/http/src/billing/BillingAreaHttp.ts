import { areaHttp } from "../Area.ts"
import { BillingApi, BillingHooksApi } from "@hostplane/api/billing/BillingApi"
import { BillingHandlers } from "./BillingHandlers.ts"

export const BillingAreaHttp = areaHttp({
  name: "billing",
  groups: [BillingHooksApi, BillingApi],
  handlers: BillingHandlers,
  routes: [
    "POST /v1/hooks/billing",
    "GET /v1/orgs/{orgSlug}/billing",
    "POST /v1/orgs/{orgSlug}/billing/checkout",
    "POST /v1/orgs/{orgSlug}/billing/portal",
    "POST /v1/orgs/{orgSlug}/billing/session",
    "POST /v1/orgs/{orgSlug}/billing/cancel"
  ]
})
