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
  /** The AI credit product id (a pay-what-you-want price, so `amount` sets it). */
  readonly creditProduct?: string | undefined
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

const failure = (reason: Billing.PaymentGatewayError["reason"], message: string) =>
  new Billing.PaymentGatewayError({ reason, message })

/**
 * `PaymentGateway` as a client of Polar's API, the subset of decisions.md part 7: `POST /v1/checkouts/`,
 * `POST /v1/customer-sessions/`, `PATCH /v1/subscriptions/{id}`, with `Authorization: Bearer <token>`. Polar's 404
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
    unknownOn: ReadonlyArray<number>
  ): Effect.Effect<S["Type"], Billing.PaymentGatewayError> =>
    client.execute(request).pipe(
      Effect.mapError((error) => failure("unavailable", `Polar ${what} is unreachable: ${error.message}`)),
      Effect.flatMap((response) => {
        if (unknownOn.includes(response.status)) {
          return Effect.fail(failure("unknown", `Polar ${what}: not found (status ${response.status})`))
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
      []
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
      [404, 422]
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
      [404]
    )
    return {
      id: updated.id,
      status: updated.status,
      periodEnd: updated.current_period_end ?? null,
      cancelAtPeriodEnd: updated.cancel_at_period_end
    }
  })

  return Billing.PaymentGateway.of({
    status,
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
  creditProduct: setting("SERVICE_POLAR_CREDIT_PRODUCT")
}).pipe(
  Config.map((env) =>
    Option.map(env.token, (token) => ({
      url: Option.getOrUndefined(env.url),
      token: Redacted.make(token),
      proProduct: Option.getOrUndefined(env.proProduct),
      creditProduct: Option.getOrUndefined(env.creditProduct)
    }))
  )
)

/**
 * Provides `PaymentGateway` from the `SERVICE_POLAR_*` settings when a token is set, and nothing otherwise, so core's
 * default (billing off: 501 `billing_off`) applies.
 */
export const layerConfig: Layer.Layer<never, Config.ConfigError> = Layer.unwrap(
  Effect.map(config, Option.match({ onNone: () => Layer.empty, onSome: layer }))
)
