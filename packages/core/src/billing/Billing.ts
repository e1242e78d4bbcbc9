import { Schema } from "effect"
import { OrgId } from "../kernel/Ids.ts"
import { Plan } from "../orgs/Org.ts"
import { PlanLimits } from "../kernel/PlanLimits.ts"

export { AiLimits, PlanLimits } from "../kernel/PlanLimits.ts"

/** A subscription status as BillingStatus shows it. */
export const SubscriptionStatus = Schema.Literals(["active", "past_due", "canceled"])
export type SubscriptionStatus = typeof SubscriptionStatus.Type

/** The provider statuses that make a live paid subscription and the `pro` plan (spec part 3, decisions.md part 4). */
export const liveStatuses: ReadonlyArray<string> = ["active", "trialing", "past_due"]

export const isLive = (status: string | null): boolean => status !== null && liveStatuses.includes(status)

/** The provider's status in BillingStatus's words: trialing counts as active, anything not live as canceled. */
export const shownStatus = (status: string): SubscriptionStatus =>
  status === "past_due" ? "past_due" : isLive(status) ? "active" : "canceled"

export const BillingStatus = Schema.Struct({
  plan: Plan,
  /** Null when the org never had a subscription. */
  status: Schema.NullOr(SubscriptionStatus),
  periodEnd: Schema.NullOr(Schema.String),
  cancelAtPeriodEnd: Schema.Boolean,
  enabled: Schema.Boolean,
  sandbox: Schema.Boolean,
  limits: Schema.Struct({ free: PlanLimits, pro: PlanLimits })
})
export type BillingStatus = typeof BillingStatus.Type

/** The org's subscription as the webhooks (and a cancel) last left it. */
export interface SubscriptionRow {
  readonly orgId: OrgId
  /** Null until a subscription event names one (an org that only bought credit). */
  readonly subscriptionId: string | null
  readonly status: string | null
  readonly periodEnd: string | null
  readonly cancelAtPeriodEnd: boolean
  /** The `timestamp` of the newest subscription event applied; an older one arriving later is ignored. */
  readonly eventAt: string | null
  /** When a webhook first named the org as the provider's customer: its billing history begins. */
  readonly customerSince: string | null
  readonly updatedAt: string
}

export const CheckoutInput = Schema.Struct({ returnTo: Schema.String })
export const PortalInput = Schema.Struct({ returnTo: Schema.optionalKey(Schema.String) })
export const CancelInput = Schema.Struct({ cancel: Schema.Boolean })

export const UrlAnswer = Schema.Struct({ url: Schema.String })
export const SessionAnswer = Schema.Struct({ token: Schema.String, expiresAt: Schema.String })
export const CancelAnswer = Schema.Struct({
  status: Schema.NullOr(SubscriptionStatus),
  cancelAtPeriodEnd: Schema.Boolean,
  periodEnd: Schema.NullOr(Schema.String)
})
export type CancelAnswer = typeof CancelAnswer.Type

export const WebhookAnswer = Schema.Struct({ applied: Schema.Boolean })

/** The parts of a Polar webhook body the service reads (`{ type, timestamp, data }`); anything else is ignored. */
export const WebhookBody = Schema.Struct({
  type: Schema.String,
  timestamp: Schema.optionalKey(Schema.String),
  data: Schema.Struct({
    id: Schema.optionalKey(Schema.String),
    status: Schema.optionalKey(Schema.String),
    current_period_end: Schema.optionalKey(Schema.NullOr(Schema.String)),
    cancel_at_period_end: Schema.optionalKey(Schema.Boolean),
    customer: Schema.optionalKey(
      Schema.NullOr(Schema.Struct({ external_id: Schema.optionalKey(Schema.NullOr(Schema.String)) }))
    ),
    metadata: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown)))
  })
})
export type WebhookBody = typeof WebhookBody.Type
