import { Billing } from "@hostplane/core"
import { Effect, Layer } from "effect"

/** What an in-process gateway was asked, and the customers and subscriptions it knows. */
export interface PaymentGatewayMemoryState {
  readonly checkouts: Array<Billing.CheckoutRequest>
  /** External customer ids (org ids) with billing history at the provider. */
  readonly customers: Set<string>
  readonly subscriptions: Map<string, Billing.SubscriptionState>
  /** Off-session charges made, by reference (one per reference however often it is asked). */
  readonly charges: Map<string, Billing.SavedMethodCharge>
  /** While true every call fails `unavailable`. */
  down: boolean
  /** While true every off-session charge is `declined`. */
  declined: boolean
}

/**
 * An in-process `PaymentGateway` for core tests and examples: checkouts get a `memory://` URL, a customer session
 * needs a known customer, a cancel a known subscription. Every product is configured unless `status` says otherwise.
 */
export const make = (
  state: PaymentGatewayMemoryState,
  status: Billing.GatewayStatus = { plans: true, credit: true, sandbox: true }
): Billing.PaymentGateway["Service"] => {
  const fail = (reason: Billing.PaymentGatewayError["reason"], message: string) =>
    Effect.fail(new Billing.PaymentGatewayError({ reason, message }))
  const guard = <A>(configured: boolean, run: () => Effect.Effect<A, Billing.PaymentGatewayError>) =>
    !configured ? fail("off", "not configured") : state.down ? fail("unavailable", "the gateway is down") : run()
  return Billing.PaymentGateway.of({
    status,
    checkout: (request) =>
      guard(request.product === "pro" ? status.plans : status.credit, () => {
        state.checkouts.push(request)
        return Effect.succeed({ url: `memory://checkout/${state.checkouts.length}` })
      }),
    customerSession: (customer) =>
      guard(status.plans, () =>
        state.customers.has(customer)
          ? Effect.succeed({
              token: `memory_cst_${customer}_${state.checkouts.length}`,
              expiresAt: new Date(Date.now() + 60 * 60 * 1000).toISOString(),
              portalUrl: `memory://portal/${customer}`
            })
          : fail("unknown", `no customer ${customer}`)
      ),
    setCancelAtPeriodEnd: (subscriptionId, cancel) =>
      guard(status.plans, () => {
        const subscription = state.subscriptions.get(subscriptionId)
        if (subscription === undefined) return fail("unknown", `no subscription ${subscriptionId}`)
        const next = { ...subscription, cancelAtPeriodEnd: cancel }
        state.subscriptions.set(subscriptionId, next)
        return Effect.succeed(next)
      }),
    chargeSavedMethod: (charge) =>
      guard(status.credit, () => {
        if (!state.customers.has(charge.customer)) return fail("unknown", `no customer ${charge.customer}`)
        if (state.declined) return fail("declined", "the card was declined")
        if (!state.charges.has(charge.reference)) state.charges.set(charge.reference, charge)
        return Effect.succeed({ orderId: `memory_order_${charge.reference}` })
      })
  })
}

export const emptyState = (): PaymentGatewayMemoryState => ({
  checkouts: [],
  customers: new Set(),
  subscriptions: new Map(),
  charges: new Map(),
  down: false,
  declined: false
})

export const layer = (state: PaymentGatewayMemoryState = emptyState(), status?: Billing.GatewayStatus) =>
  Layer.succeed(Billing.PaymentGateway, make(state, status))
