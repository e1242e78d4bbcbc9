import { BillingStore } from "@hostplane/core/billing/BillingStore"
import { OrgId } from "@hostplane/core/kernel/Ids"
import { Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { NullableTimestamp, Timestamp } from "../internal/Rows.ts"

const SubscriptionRowSchema = Schema.Struct({
  orgId: OrgId,
  subscriptionId: Schema.NullOr(Schema.String),
  status: Schema.NullOr(Schema.String),
  periodEnd: NullableTimestamp,
  cancelAtPeriodEnd: Schema.Boolean,
  eventAt: NullableTimestamp,
  customerSince: NullableTimestamp,
  updatedAt: Timestamp
})

/** `BillingStore` on PostgreSQL: a webhook claim is an insert on the id's primary key, so replicas apply it once. */
export const layer = Layer.effect(
  BillingStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const find = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: SubscriptionRowSchema,
      execute: (orgId) =>
        sql`SELECT org_id, subscription_id, status, period_end, cancel_at_period_end, event_at, customer_since,
              updated_at
            FROM billing_subscriptions WHERE org_id = ${orgId}`
    })

    return BillingStore.of({
      find: (orgId) => find(orgId).pipe(Effect.orDie),
      save: (row) =>
        sql`INSERT INTO billing_subscriptions (org_id, subscription_id, status, period_end, cancel_at_period_end,
              event_at, customer_since, updated_at)
            VALUES (${row.orgId}, ${row.subscriptionId}, ${row.status}, ${row.periodEnd}::timestamptz,
              ${row.cancelAtPeriodEnd}, ${row.eventAt}::timestamptz, ${row.customerSince}::timestamptz,
              ${row.updatedAt}::timestamptz)
            ON CONFLICT (org_id) DO UPDATE SET
              subscription_id = EXCLUDED.subscription_id,
              status = EXCLUDED.status,
              period_end = EXCLUDED.period_end,
              cancel_at_period_end = EXCLUDED.cancel_at_period_end,
              event_at = EXCLUDED.event_at,
              customer_since = EXCLUDED.customer_since,
              updated_at = EXCLUDED.updated_at`.pipe(Effect.asVoid, Effect.orDie),
      // ON CONFLICT DO NOTHING waits for a concurrent insert of the same id to commit, then inserts nothing.
      claimWebhook: (webhookId, type, at) =>
        sql`INSERT INTO billing_webhooks (webhook_id, type, received_at)
            VALUES (${webhookId}, ${type}, ${at}::timestamptz)
            ON CONFLICT (webhook_id) DO NOTHING RETURNING webhook_id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        )
    })
  })
)
