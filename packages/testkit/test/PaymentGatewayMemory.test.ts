import { assert, it } from "@effect/vitest"
import { type Kernel } from "@hostplane/core"
import { PaymentGatewayMemory } from "@hostplane/testkit"
import { Effect } from "effect"

const org = "org_memory" as Kernel.OrgId

it.effect("the memory gateway records checkouts, knows its customers and subscriptions, and can be down", () =>
  Effect.gen(function* () {
    const state = PaymentGatewayMemory.emptyState()
    const gateway = PaymentGatewayMemory.make(state)
    const checkout = yield* gateway.checkout({ product: "pro", customer: org, successUrl: "https://x/", metadata: {} })
    assert.strictEqual(checkout.url, "memory://checkout/1")
    assert.strictEqual(state.checkouts.length, 1)
    assert.strictEqual((yield* Effect.flip(gateway.customerSession(org, undefined))).reason, "unknown")
    state.customers.add(org)
    assert.strictEqual((yield* gateway.customerSession(org, undefined)).portalUrl, `memory://portal/${org}`)
    state.subscriptions.set("sub_1", { id: "sub_1", status: "active", periodEnd: null, cancelAtPeriodEnd: false })
    assert.isTrue((yield* gateway.setCancelAtPeriodEnd("sub_1", true)).cancelAtPeriodEnd)
    assert.strictEqual((yield* Effect.flip(gateway.setCancelAtPeriodEnd("sub_2", true))).reason, "unknown")
    state.down = true
    assert.strictEqual((yield* Effect.flip(gateway.customerSession(org, undefined))).reason, "unavailable")
    const off = PaymentGatewayMemory.make(state, { plans: false, credit: false, sandbox: false })
    assert.strictEqual(
      (yield* Effect.flip(off.checkout({ product: "credit", customer: org, successUrl: "x", metadata: {} }))).reason,
      "off"
    )
  })
)
