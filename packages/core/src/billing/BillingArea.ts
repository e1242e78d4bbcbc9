import { Effect, Option } from "effect"
import { PaymentGateway } from "./PaymentGateway.ts"
import { area, areaSettings } from "../Area.ts"
import { BillingConfig } from "./BillingConfig.ts"
import { isLive } from "./Billing.ts"
import { Billings } from "./Billings.ts"
import { BillingStore } from "./BillingStore.ts"
import { CreditStore } from "../ai/CreditStore.ts"
import type { SubscriptionCheck } from "../orgs/OrgHooks.ts"

/**
 * Spec 4.15: plan billing through the payment provider (the host's `PaymentGateway`, `PaymentGateway.off` without one); its subscription
 * check guards org delete. The AI credit ledger's store is here because `order.paid` raises the balance.
 */
export const BillingArea = area({
  name: "billing",
  ports: [PaymentGateway.off],
  settings: areaSettings({ key: "billing", make: BillingConfig.make, fromEnv: () => BillingConfig.layerConfig }),
  stores: [BillingStore, CreditStore],
  services: Billings.layer,
  // A live paid subscription (status active, trialing or past_due) refuses org delete with `active_subscription`.
  subscription: Effect.map(
    Effect.service(BillingStore),
    (store): SubscriptionCheck =>
      (orgId) =>
        Effect.map(store.find(orgId), (row) => Option.isSome(row) && isLive(row.value.status))
  )
})
