import { Context, Effect, Layer, Schema } from "effect"
import { portOff } from "../kernel/Port.ts"
import type { OrgId } from "../kernel/Ids.ts"

/** What the deployment's payment provider is set up for: checkouts of the Pro plan, of AI credit, a test environment. */
export interface GatewayStatus {
  /** A token and the Pro product: plan checkout, portal, session and cancel work. */
  readonly plans: boolean
  /** A token and the credit product: AI credit checkout works. */
  readonly credit: boolean
  readonly sandbox: boolean
}

/** A subscription as the provider reports it after a change. */
export interface SubscriptionState {
  readonly id: string
  readonly status: string
  readonly periodEnd: string | null
  readonly cancelAtPeriodEnd: boolean
}

export interface CheckoutRequest {
  readonly product: "pro" | "credit"
  /** The org as the provider's customer (its external id). */
  readonly customer: OrgId
  readonly successUrl: string
  readonly metadata: Readonly<Record<string, string>>
  /** For a credit checkout: the price in cents. */
  readonly amountCents?: number
}

/** An off-session charge of the customer's saved payment method (an AI credit auto top-up). */
export interface SavedMethodCharge {
  readonly product: "credit"
  readonly customer: OrgId
  readonly amountCents: number
  /** Copied onto the order, so its `order.paid` webhook raises the balance like a checkout's. */
  readonly metadata: Readonly<Record<string, string>>
  /** Unique per top-up: a retry finds the order it already made instead of charging again. */
  readonly reference: string
}

export interface CustomerSession {
  readonly token: string
  readonly expiresAt: string
  readonly portalUrl: string
}

/**
 * The provider's failure: `off` (not configured for this), `unknown` (no such customer or subscription there),
 * `declined` (the saved payment method was refused), `unavailable` (it failed or did not answer).
 */
export class PaymentGatewayError extends Schema.TaggedError<PaymentGatewayError>()("PaymentGatewayError", {
  reason: Schema.Literals(["off", "unknown", "declined", "unavailable"]),
  message: Schema.String
}) {}

/** The payment provider (Polar in production): checkouts, customer sessions and subscription changes, never the plan itself. */
export class PaymentGateway extends Context.Service<
  PaymentGateway,
  {
    readonly status: GatewayStatus
    readonly checkout: (request: CheckoutRequest) => Effect.Effect<{ readonly url: string }, PaymentGatewayError>
    /** A customer session for the org's customer; `unknown` when the provider has no such customer. */
    readonly customerSession: (
      customer: OrgId,
      returnUrl: string | undefined
    ) => Effect.Effect<CustomerSession, PaymentGatewayError>
    /** Schedules (true) or withdraws (false) the end of a subscription at its period end. */
    readonly setCancelAtPeriodEnd: (
      subscriptionId: string,
      cancel: boolean
    ) => Effect.Effect<SubscriptionState, PaymentGatewayError>
    /**
     * Charges the customer's saved payment method without the customer present; the balance rises only when the
     * order's `order.paid` webhook arrives. Idempotent on `reference`.
     */
    readonly chargeSavedMethod: (
      charge: SavedMethodCharge
    ) => Effect.Effect<{ readonly orderId: string }, PaymentGatewayError>
  }
>()("@hostplane/core/billing/PaymentGateway") {
  /** No provider (no `SERVICE_POLAR_*` token): every operation is `off`, which billing answers 501 `billing_off`. */
  static readonly off: Layer.Layer<PaymentGateway> = Layer.sync(PaymentGateway, () =>
    portOff({
      status: { plans: false, credit: false, sandbox: false },
      checkout: () => Effect.fail(off),
      customerSession: () => Effect.fail(off),
      setCancelAtPeriodEnd: () => Effect.fail(off),
      chargeSavedMethod: () => Effect.fail(off)
    })
  )
}

const off = new PaymentGatewayError({ reason: "off", message: "billing is not configured in this deployment" })
