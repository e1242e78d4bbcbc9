import { Billing } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"

/** Keyed by org id. */
export const subscriptionRows = memoryTable("billing.subscriptions", () => new Map<string, Billing.SubscriptionRow>())
/** Webhook id to event type. */
export const webhookIds = memoryTable("billing.webhooks", () => new Map<string, string>())

/** `BillingStore` on the shared memory state; a webhook claim joins the caller's transaction like a row insert. */
export const make = (store: MemoryStore): Billing.BillingStore["Service"] =>
  Billing.BillingStore.of({
    find: (orgId) => read(store, (tables) => Option.fromNullishOr(tables(subscriptionRows).get(orgId))),
    save: (row) =>
      write(store, (tables) => {
        tables(subscriptionRows).set(row.orgId, row)
      }),
    claimWebhook: (webhookId, type) =>
      write(store, (tables) => {
        if (tables(webhookIds).has(webhookId)) return false
        tables(webhookIds).set(webhookId, type)
        return true
      })
  })

export const layer: Layer.Layer<Billing.BillingStore, never, MemoryState> = Layer.effect(
  Billing.BillingStore,
  Effect.map(MemoryState, make)
)
