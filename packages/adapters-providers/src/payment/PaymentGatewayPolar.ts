import { Billing } from "@hostplane/core"
import { Config, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest, HttpClientResponse } from "effect/http"

/** The production API; the sandbox is `https://sandbox-api.polar.sh`. */
export const defaultUrl = "https://api.polar.sh"
export const defaultTimeout = Duration.seconds(15)

/** A Polar organization access token and the products it sells; a product left out turns its checkout off. */
export interface Options {
  /** The API origin (`SERVICE_POLAR_URL`); a URL containing `sandbox` is a test environment. */
  readonly url?: string | undefined
  readonly token: Redacted.Redacted<string>
  /** The Pro plan's subscription product id. */
  readonly proProduct?: string | undefined
  /** The AI credit product id (a pay-what-you-want price, so the checkout's `amount` sets it). */
  readonly creditProduct?: string | undefined
  /**
   * The AI credit auto top-up product id: a one-time fixed-price product, since Polar's off-session charge refuses
   * pay-what-you-want prices (the draft order's `amount` overrides the fixed price). Without it auto top-up charges
   * are `off`.
   */
  readonly topupProduct?: string | undefined
  readonly timeout?: Duration.Input | undefined
}

const Checkout = Schema.Struct({ id: Schema.String, url: Schema.String })
const CustomerSession = Schema.Struct({
  token: Schema.String,
  expires_at: Schema.String,
  customer_portal_url: Schema.String
})
const Subscription = Schema.Struct({
  id: Schema.String,
  status: Schema.String,
  current_period_end: Schema.optional(Schema.NullOr(Schema.String)),
  cancel_at_period_end: Schema.Boolean
})

const Customer = Schema.Struct({ id: Schema.String })
const Order = Schema.Struct({ id: Schema.String, status: Schema.String })
const Orders = Schema.Struct({ items: Schema.Array(Order) })

const failure = (reason: Billing.PaymentGatewayError["reason"], message: string) =>
  new Billing.PaymentGatewayError({ reason, message })

/**
 * `PaymentGateway` as a client of Polar's API, the subset of decisions.md part 7: `POST /v1/checkouts/`,
 * `POST /v1/customer-sessions/`, `PATCH /v1/subscriptions/{id}`, with `Authorization: Bearer <token>`; and for
 * auto top-up Polar's off-session charge (a draft order, then its finalize; see `chargeSavedMethod`). Polar's 404
 * (and its 422 for an unknown external customer) is `unknown`; a 5xx, 429, timeout, broken connection or an
 * unreadable answer is `unavailable`; any other refusal is `unavailable` too (the request was ours to get right).
 */
export const make = Effect.fnUntraced(function* (options: Options) {
  const base = (options.url ?? defaultUrl).replace(/\/+$/, "")
  const timeout = options.timeout ?? defaultTimeout
  const status: Billing.GatewayStatus = {
    plans: options.proProduct !== undefined,
    credit: options.creditProduct !== undefined,
    sandbox: base.includes("sandbox")
  }
  const client = (yield* HttpClient.HttpClient).pipe(
    HttpClient.mapRequest((request) =>
      request.pipe(
        HttpClientRequest.acceptJson,
        HttpClientRequest.setHeader("user-agent", "hostplane"),
        HttpClientRequest.bearerToken(Redacted.value(options.token))
      )
    )
  )

  const call = <S extends Schema.Constraint & { readonly DecodingServices: never }>(
    what: string,
    request: HttpClientRequest.HttpClientRequest,
    schema: S,
    refusals: Readonly<Record<number, Billing.PaymentGatewayError["reason"]>>
  ): Effect.Effect<S["Type"], Billing.PaymentGatewayError> =>
    client.execute(request).pipe(
      Effect.mapError((error) => failure("unavailable", `Polar ${what} is unreachable: ${error.message}`)),
      Effect.flatMap((response) => {
        const refused = refusals[response.status]
        if (refused !== undefined) {
          return Effect.fail(failure(refused, `Polar ${what} refused (status ${response.status})`))
        }
        if (response.status < 200 || response.status >= 300) {
          return Effect.fail(failure("unavailable", `Polar ${what} answered ${response.status}`))
        }
        return HttpClientResponse.schemaBodyJson(schema)(response).pipe(
          Effect.mapError(() => failure("unavailable", `Polar ${what} sent an unreadable answer`))
        )
      }),
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () => Effect.fail(failure("unavailable", `Polar ${what} did not answer in time`))
      })
    )

  const off = (what: string) => Effect.fail(failure("off", `no Polar ${what} product is configured`))

  const checkout = Effect.fn("PaymentGatewayPolar.checkout")(function* (request: Billing.CheckoutRequest) {
    const product = request.product === "pro" ? options.proProduct : options.creditProduct
    if (product === undefined) return yield* off(request.product)
    const body = {
      products: [product],
      success_url: request.successUrl,
      external_customer_id: request.customer,
      metadata: request.metadata,
      ...(request.amountCents === undefined ? {} : { amount: request.amountCents })
    }
    const created = yield* call(
      "checkout",
      HttpClientRequest.bodyJsonUnsafe(HttpClientRequest.post(`${base}/v1/checkouts/`), body),
      Checkout,
      {}
    )
    return { url: created.url }
  })

  const customerSession = Effect.fn("PaymentGatewayPolar.customerSession")(function* (
    customer: string,
    returnUrl: string | undefined
  ) {
    if (!status.plans) return yield* off("pro")
    const body = { external_customer_id: customer, ...(returnUrl === undefined ? {} : { return_url: returnUrl }) }
    const session = yield* call(
      "customer session",
      HttpClientRequest.bodyJsonUnsafe(HttpClientRequest.post(`${base}/v1/customer-sessions/`), body),
      CustomerSession,
      { 404: "unknown", 422: "unknown" }
    )
    return { token: session.token, expiresAt: session.expires_at, portalUrl: session.customer_portal_url }
  })

  const setCancelAtPeriodEnd = Effect.fn("PaymentGatewayPolar.setCancelAtPeriodEnd")(function* (
    subscriptionId: string,
    cancel: boolean
  ) {
    if (!status.plans) return yield* off("pro")
    const updated = yield* call(
      "subscription update",
      HttpClientRequest.bodyJsonUnsafe(
        HttpClientRequest.patch(`${base}/v1/subscriptions/${encodeURIComponent(subscriptionId)}`),
        { cancel_at_period_end: cancel }
      ),
      Subscription,
      { 404: "unknown" }
    )
    return {
      id: updated.id,
      status: updated.status,
      periodEnd: updated.current_period_end ?? null,
      cancelAtPeriodEnd: updated.cancel_at_period_end
    }
  })

  /**
   * Polar's documented off-session charge (Orders, "Arbitrary charges"; `orders:write` scope, the organization's
   * off-session charges enabled): the customer by external id, `POST /v1/orders/` (a `draft` order of the top-up
   * product at `amount` cents, with `metadata`), then `POST /v1/orders/{id}/finalize`, which charges the saved payment
   * method (402 declined or no method, the order staying a draft; 403 off-session charges not enabled). A retry first
   * lists the customer's orders with this `metadata[topupId]`: an order no longer a draft is not charged again, a
   * draft left by a crash or a decline is finalized.
   */
  const chargeSavedMethod = Effect.fn("PaymentGatewayPolar.chargeSavedMethod")(function* (
    charge: Billing.SavedMethodCharge
  ) {
    const product = options.topupProduct
    if (product === undefined) return yield* off("top-up")
    const customer = yield* call(
      "customer lookup",
      HttpClientRequest.get(`${base}/v1/customers/external/${encodeURIComponent(charge.customer)}`),
      Customer,
      { 404: "unknown" }
    )
    const existing = yield* call(
      "order list",
      HttpClientRequest.get(`${base}/v1/orders/`).pipe(
        HttpClientRequest.setUrlParams({ customer_id: customer.id, "metadata[topupId]": charge.reference })
      ),
      Orders,
      {}
    )
    const found = existing.items[0]
    if (found !== undefined && found.status !== "draft") return { orderId: found.id }
    const order =
      found ??
      (yield* call(
        "order create",
        HttpClientRequest.bodyJsonUnsafe(HttpClientRequest.post(`${base}/v1/orders/`), {
          customer_id: customer.id,
          product_id: product,
          amount: charge.amountCents,
          metadata: { ...charge.metadata, topupId: charge.reference }
        }),
        Order,
        { 403: "off" }
      ))
    const finalized = yield* client
      .execute(
        HttpClientRequest.bodyJsonUnsafe(
          HttpClientRequest.post(`${base}/v1/orders/${encodeURIComponent(order.id)}/finalize`),
          {}
        )
      )
      .pipe(
        Effect.mapError((error) => failure("unavailable", `Polar order finalize is unreachable: ${error.message}`)),
        Effect.timeoutOrElse({
          duration: timeout,
          orElse: () => Effect.fail(failure("unavailable", "Polar order finalize did not answer in time"))
        })
      )
    // 412: the order is no draft any more (a finalize whose answer was lost, or one still charging): charged once.
    if ((finalized.status >= 200 && finalized.status < 300) || finalized.status === 412) return { orderId: order.id }
    if (finalized.status === 402) return yield* failure("declined", "Polar declined the saved payment method")
    if (finalized.status === 403) return yield* failure("off", "Polar off-session charges are not enabled")
    if (finalized.status === 404) return yield* failure("unknown", "Polar has no such order")
    return yield* failure("unavailable", `Polar order finalize answered ${finalized.status}`)
  })

  return Billing.PaymentGateway.of({
    status,
    chargeSavedMethod,
    checkout,
    customerSession: (customer, returnUrl) => customerSession(customer, returnUrl),
    setCancelAtPeriodEnd
  })
})

/** Polar over `fetch`. */
export const layer = (options: Options): Layer.Layer<Billing.PaymentGateway> =>
  Layer.effect(Billing.PaymentGateway, make(options)).pipe(Layer.provide(FetchHttpClient.layer))

const setting = (name: string) =>
  Config.String(name).pipe(Config.option, Config.map(Option.filter((value) => value.trim() !== "")))

/** The `SERVICE_POLAR_*` settings; `None` without a token (billing is then off). */
export const config: Config.Config<Option.Option<Options>> = Config.all({
  url: setting("SERVICE_POLAR_URL"),
  token: setting("SERVICE_POLAR_TOKEN"),
  proProduct: setting("SERVICE_POLAR_PRO_PRODUCT"),
  creditProduct: setting("SERVICE_POLAR_CREDIT_PRODUCT"),
  topupProduct: setting("SERVICE_POLAR_TOPUP_PRODUCT")
}).pipe(
  Config.map((env) =>
    Option.map(env.token, (token) => ({
      url: Option.getOrUndefined(env.url),
      token: Redacted.make(token),
      proProduct: Option.getOrUndefined(env.proProduct),
      creditProduct: Option.getOrUndefined(env.creditProduct),
      topupProduct: Option.getOrUndefined(env.topupProduct)
    }))
  )
)

/**
 * `PaymentGateway` from the `SERVICE_POLAR_*` settings when a token is set, else `PaymentGateway.off` (billing off:
 * 501 `billing_off`).
 */
export const layerConfig: Layer.Layer<Billing.PaymentGateway, Config.ConfigError> = Layer.unwrap(
  Effect.map(config, Option.match({ onNone: () => Billing.PaymentGateway.off, onSome: layer }))
)
