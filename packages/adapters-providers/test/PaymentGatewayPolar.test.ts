import { assert, describe, it } from "@effect/vitest"
import { PaymentGatewayPolar } from "@hostplane/adapters-providers"
import { type Billing, type Kernel } from "@hostplane/core"
import { type FakePolar, startFakePolar } from "@hostplane/testkit"
import { Effect, Exit, Option, Redacted } from "effect"
import { FetchHttpClient } from "effect/http"

const topupProduct = "prod_topup_fixed"
const creditProduct = "prod_credit_custom"
const org = "org_polar_charge" as Kernel.OrgId

/** The fake over loopback (its products as Polar would hold them) and the adapter pointed at it. */
const setup = (options: Partial<PaymentGatewayPolar.Options> = {}) =>
  Effect.gen(function* () {
    const fake: FakePolar = yield* Effect.acquireRelease(
      Effect.promise(() =>
        startFakePolar({
          products: {
            [topupProduct]: { recurring: false, price: "fixed" },
            [creditProduct]: { recurring: false, price: "custom" },
            prod_pro: { recurring: true, price: "fixed" }
          }
        })
      ),
      (fake) => Effect.promise(() => fake.close())
    )
    const gateway = yield* PaymentGatewayPolar.make({
      url: fake.url,
      token: Redacted.make(fake.token),
      creditProduct,
      topupProduct,
      timeout: "5 seconds",
      ...options
    }).pipe(Effect.provide(FetchHttpClient.layer))
    fake.customers.add(org)
    fake.paymentMethods.add(org)
    return { fake, gateway }
  })

const charge = (reference: string, amountCents = 1000): Billing.SavedMethodCharge => ({
  product: "credit",
  customer: org,
  amountCents,
  metadata: { kind: "ai_credit", microCents: String(amountCents * 1_000_000), orgSlug: "acme", topupId: reference },
  reference
})

const reasonOf = <A>(exit: Exit.Exit<A, Billing.PaymentGatewayError>) =>
  Exit.isFailure(exit) ? Option.getOrThrow(Exit.findErrorOption(exit)).reason : "succeeded"

const calls = (fake: FakePolar) => fake.requests.map((request) => `${request.method} ${request.path}`)

describe("PaymentGatewayPolar.chargeSavedMethod against the loopback Polar fake", () => {
  it.effect("a draft order of the top-up product at the amount, with the metadata, then its finalize: paid", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { fake, gateway } = yield* setup()
        const { orderId } = yield* gateway.chargeSavedMethod(charge("job_1", 2500))
        assert.deepStrictEqual(calls(fake), [
          `GET /v1/customers/external/${org}`,
          "GET /v1/orders/",
          "POST /v1/orders/",
          `POST /v1/orders/${orderId}/finalize`
        ])
        assert.isTrue(fake.requests.every((request) => request.token === fake.token))
        const order = fake.orders.get(orderId)!
        assert.strictEqual(order.status, "paid")
        assert.strictEqual(order.amount, 2500)
        assert.strictEqual(order.product_id, topupProduct)
        assert.deepStrictEqual(order.customer, { id: `cus_${org}`, external_id: org })
        assert.deepStrictEqual(order.metadata, {
          kind: "ai_credit",
          microCents: "2500000000",
          orgSlug: "acme",
          topupId: "job_1"
        })
      })
    )
  )

  it.effect("a retry of the same reference finds the paid order: nothing is created or charged again", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { fake, gateway } = yield* setup()
        const first = yield* gateway.chargeSavedMethod(charge("job_2"))
        const before = fake.requests.length
        const again = yield* gateway.chargeSavedMethod(charge("job_2"))
        assert.strictEqual(again.orderId, first.orderId)
        assert.deepStrictEqual(calls(fake).slice(before), [`GET /v1/customers/external/${org}`, "GET /v1/orders/"])
        assert.strictEqual(fake.orders.size, 1)
        // Another reference is another order.
        const other = yield* gateway.chargeSavedMethod(charge("job_3"))
        assert.notStrictEqual(other.orderId, first.orderId)
        assert.strictEqual(fake.orders.size, 2)
      })
    )
  )

  it.effect("a finalize whose answer is lost is unavailable; the retry finds the order paid and charges nothing", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { fake, gateway } = yield* setup()
        fake.dropNextFinalizeAnswer = true
        assert.strictEqual(reasonOf(yield* Effect.exit(gateway.chargeSavedMethod(charge("job_4")))), "unavailable")
        const [order] = [...fake.orders.values()]
        assert.strictEqual(order!.status, "paid")
        const finalizesBefore = calls(fake).filter((call) => call.endsWith("/finalize")).length
        const retried = yield* gateway.chargeSavedMethod(charge("job_4"))
        assert.strictEqual(retried.orderId, order!.id)
        assert.strictEqual(calls(fake).filter((call) => call.endsWith("/finalize")).length, finalizesBefore)
        assert.strictEqual(fake.orders.size, 1)
      })
    )
  )

  it.effect("a declined card is declined and leaves a draft; the next attempt finalizes that same draft", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { fake, gateway } = yield* setup()
        fake.declines.add(org)
        assert.strictEqual(reasonOf(yield* Effect.exit(gateway.chargeSavedMethod(charge("job_5")))), "declined")
        const [draft] = [...fake.orders.values()]
        assert.strictEqual(draft!.status, "draft")
        fake.declines.delete(org)
        const paid = yield* gateway.chargeSavedMethod(charge("job_5"))
        assert.strictEqual(paid.orderId, draft!.id)
        assert.strictEqual(fake.orders.size, 1)
        assert.strictEqual(fake.orders.get(draft!.id)!.status, "paid")
        // No saved payment method at all: Polar's 402 too.
        fake.paymentMethods.delete(org)
        assert.strictEqual(reasonOf(yield* Effect.exit(gateway.chargeSavedMethod(charge("job_6")))), "declined")
      })
    )
  )

  it.effect("an unknown customer is unknown; off-session charges not enabled is off; an outage is unavailable", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { fake, gateway } = yield* setup()
        fake.customers.delete(org)
        assert.strictEqual(reasonOf(yield* Effect.exit(gateway.chargeSavedMethod(charge("job_7")))), "unknown")
        fake.customers.add(org)
        fake.offSessionCharges = false
        assert.strictEqual(reasonOf(yield* Effect.exit(gateway.chargeSavedMethod(charge("job_8")))), "off")
        assert.strictEqual(fake.orders.size, 0)
        fake.offSessionCharges = true
        fake.outage = 503
        assert.strictEqual(reasonOf(yield* Effect.exit(gateway.chargeSavedMethod(charge("job_9")))), "unavailable")
        fake.outage = undefined
        assert.strictEqual(fake.orders.size, 0)
      })
    )
  )

  it.effect("without a top-up product the charge is off and Polar is not asked", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { fake, gateway } = yield* setup({ topupProduct: undefined })
        assert.strictEqual(reasonOf(yield* Effect.exit(gateway.chargeSavedMethod(charge("job_10")))), "off")
        assert.strictEqual(fake.requests.length, 0)
      })
    )
  )

  it.effect(
    "Polar refuses a pay-what-you-want product for an off-session charge (why the top-up product is separate)",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { fake, gateway } = yield* setup({ topupProduct: creditProduct })
          assert.strictEqual(reasonOf(yield* Effect.exit(gateway.chargeSavedMethod(charge("job_11")))), "unavailable")
          const create = fake.requests.find((request) => request.method === "POST" && request.path === "/v1/orders/")
          assert.strictEqual(create?.body.product_id, creditProduct)
          assert.strictEqual(fake.orders.size, 0)
        })
      )
  )
})
