import { Context, type Effect, type Option } from "effect"
import type { OrgId } from "../kernel/Ids.ts"
import type { SubscriptionRow } from "./Billing.ts"

/** Each org's subscription row, and the webhook ids already received (a repeated id is applied once, across replicas). */
export class BillingStore extends Context.Service<
  BillingStore,
  {
    readonly find: (orgId: OrgId) => Effect.Effect<Option.Option<SubscriptionRow>>
    /** Inserts or replaces the org's row. */
    readonly save: (row: SubscriptionRow) => Effect.Effect<void>
    /**
     * Records a webhook id inside the caller's transaction; false when it was already recorded. A concurrent claim of
     * the same id waits for the first one's transaction and then answers false.
     */
    readonly claimWebhook: (webhookId: string, type: string, at: string) => Effect.Effect<boolean>
  }
>()("@hostplane/core/billing/BillingStore") {}
