import { Billing } from "@hostplane/core"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

/** A subscription the fake holds, in Polar's field names. */
export interface FakePolarSubscription {
  id: string
  status: string
  current_period_end: string
  cancel_at_period_end: boolean
  customer: { external_id: string }
}

/** One request the fake received: method, path, the bearer token and the JSON body. */
export interface FakePolarRequest {
  readonly method: string
  readonly path: string
  readonly token: string | null
  readonly body: any
}

/** A product the fake sells, as Polar's off-session charge checks it. */
export interface FakePolarProduct {
  /** A subscription product (`is_recurring`): no off-session charge. */
  readonly recurring: boolean
  /** The product's price type: off-session charges take `fixed` (and `free`) prices only, never pay-what-you-want. */
  readonly price: "fixed" | "custom" | "free"
}

/** An order in Polar's field names (the subset the adapter and the `order.paid` webhook read). */
export interface FakePolarOrder {
  id: string
  status: "draft" | "pending" | "paid"
  customer_id: string
  product_id: string
  amount: number
  currency: string
  billing_reason: "purchase"
  metadata: Record<string, string | number | boolean>
  created_at: string
  customer: { id: string; external_id: string }
}

export interface FakePolarOptions {
  /** The organization access token the fake accepts; default `"polar_oat_test"`. */
  readonly token?: string
  /** `SERVICE_BILLING_WEBHOOK_SECRET` as Polar shows it; default a random `whsec_...`. */
  readonly webhookSecret?: string
  /** The products the organization sells, by id; the off-session charge refuses any other. Default none. */
  readonly products?: Readonly<Record<string, FakePolarProduct>>
}

/** What `deliver` sends instead of a correct delivery (a forged, stale or replayed one). */
export interface DeliveryOptions {
  readonly id?: string
  /** Unix seconds; default now. */
  readonly timestamp?: number
  /** Sign with this secret instead of the fake's own. */
  readonly secret?: string
  /** Send this signature header as is. */
  readonly signature?: string
  /** Send this body instead of the event's JSON (after signing the event, to forge a change). */
  readonly tamperedBody?: string
}

export interface FakePolar {
  /** The API origin, for `SERVICE_POLAR_URL` (`<url>/sandbox` reaches the same API). */
  readonly url: string
  readonly token: string
  readonly webhookSecret: string
  readonly requests: Array<FakePolarRequest>
  readonly subscriptions: Map<string, FakePolarSubscription>
  /** External customer ids (org ids) Polar knows: a paid checkout or a subscription makes one. */
  readonly customers: Set<string>
  /** The status every API call answers while set (a 500 or 503 outage), or `"hang"` to never answer. */
  outage: number | "hang" | undefined
  readonly products: Map<string, FakePolarProduct>
  /** Orders by id: drafts made by `POST /v1/orders/`, paid once finalized. */
  readonly orders: Map<string, FakePolarOrder>
  /** External customer ids with a saved payment method (a paid checkout saves one). */
  readonly paymentMethods: Set<string>
  /** External customer ids whose saved method is declined (finalize answers 402 and the order stays a draft). */
  readonly declines: Set<string>
  /** The organization's `off_session_charges_enabled` feature (default true): false answers 403 to both order calls. */
  offSessionCharges: boolean
  /** While true the next finalize charges and pays the order but drops the connection instead of answering. */
  dropNextFinalizeAnswer: boolean
  /** Where a finalized order's `order.paid` is delivered, signed, after the finalize answers; none while unset. */
  webhookUrl: string | undefined
  /** Resolves once every webhook the fake started delivering on its own has been answered. */
  readonly settled: () => Promise<void>
  /** Signs `event` as Polar does and posts it to `url`; answers the status and JSON body. */
  readonly deliver: (
    url: string,
    event: { readonly type: string; readonly data: Record<string, unknown> },
    options?: DeliveryOptions
  ) => Promise<{ readonly status: number; readonly body: any; readonly id: string }>
  /** Creates (or replaces) a subscription of `orgId` and answers the `subscription.*` event data Polar would send. */
  readonly subscribe: (orgId: string, status?: string) => FakePolarSubscription
  readonly close: () => Promise<void>
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify(body))
}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

const hourMs = 60 * 60 * 1000

/**
 * A loopback fake of the Polar API subset decisions.md part 7 names (checkouts, customer sessions, subscription
 * updates; bearer token checked, Polar's status codes) and a webhook sender that signs as Polar signs: Standard
 * Webhooks headers, HMAC-SHA256 keyed with the UTF-8 bytes of the whole `whsec_...` secret.
 *
 * Also Polar's off-session charge as its Orders documentation describes it ("Arbitrary charges"): the customer by
 * external id (`GET /v1/customers/external/{id}`), `GET /v1/orders/` filtered by `customer_id`,
 * `external_customer_id` and `metadata[key]=value`, `POST /v1/orders/` (a `draft` of a one-time fixed-price product,
 * `amount` in cents overriding its price, at least 50; 422 otherwise, 403 while off-session charges are off) and
 * `POST /v1/orders/{id}/finalize` (402 declined or no saved method, the order staying a draft; 403 off; 404; 412 not a
 * draft; else the order is `paid` and its `order.paid` webhook follows).
 */
export const startFakePolar = async (options: FakePolarOptions = {}): Promise<FakePolar> => {
  const token = options.token ?? "polar_oat_test"
  const webhookSecret = options.webhookSecret ?? `whsec_${randomBytes(24).toString("base64")}`
  const requests: Array<FakePolarRequest> = []
  const subscriptions = new Map<string, FakePolarSubscription>()
  const customers = new Set<string>()
  const products = new Map(Object.entries(options.products ?? {}))
  const orders = new Map<string, FakePolarOrder>()
  const paymentMethods = new Set<string>()
  const declines = new Set<string>()
  const deliveries = new Set<Promise<unknown>>()
  // Polar's customer id of an external id (the org id): one per external id, made when first known.
  const customerId = (external: string) => `cus_${external}`
  const externalOf = (id: string) => [...customers].find((external) => customerId(external) === id)
  let nextId = 0
  const id = (prefix: string) => `${prefix}_${(++nextId).toString().padStart(6, "0")}`

  const server = createServer(async (req, res) => {
    const text = await readBody(req)
    const auth = req.headers.authorization ?? ""
    const bearer = auth.startsWith("Bearer ") ? auth.slice("Bearer ".length) : null
    let body: any = null
    try {
      body = text === "" ? null : JSON.parse(text)
    } catch {
      return json(res, 400, { error: "BadRequest", detail: "invalid JSON" })
    }
    // `<url>/sandbox` reaches the same API, so a test can see the `sandbox` flag a sandbox URL sets.
    const path = (req.url ?? "/").split("?")[0]!.replace(/^\/sandbox(?=\/)/, "")
    requests.push({ method: req.method ?? "", path, token: bearer, body })
    if (fake.outage === "hang") return
    if (fake.outage !== undefined) return json(res, fake.outage, { error: "ServerError", detail: "outage" })
    if (bearer !== token) return json(res, 401, { error: "Unauthorized", detail: "invalid_token" })
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    if (req.method === "POST" && path === "/v1/checkouts/") {
      if (!Array.isArray(body?.products) || typeof body?.success_url !== "string") {
        return json(res, 422, { detail: [{ loc: ["body"], msg: "products and success_url are required" }] })
      }
      const checkoutId = id("chk")
      return json(res, 201, { id: checkoutId, url: `${base}/checkout/${checkoutId}`, status: "open" })
    }
    if (req.method === "POST" && path === "/v1/customer-sessions/") {
      const external = body?.external_customer_id
      if (typeof external !== "string" || !customers.has(external)) {
        return json(res, 422, { detail: [{ loc: ["body", "external_customer_id"], msg: "Customer does not exist." }] })
      }
      const session = `polar_cst_${randomBytes(16).toString("hex")}`
      return json(res, 201, {
        id: id("cs"),
        token: session,
        expires_at: new Date(Date.now() + hourMs).toISOString(),
        customer_portal_url: `${base}/portal?customer_session_token=${session}`,
        return_url: body?.return_url ?? null
      })
    }
    const external = /^\/v1\/customers\/external\/([^/]+)$/.exec(path)
    if (req.method === "GET" && external !== null) {
      const externalId = decodeURIComponent(external[1]!)
      if (!customers.has(externalId)) return json(res, 404, { error: "ResourceNotFound", detail: "Not found" })
      return json(res, 200, { id: customerId(externalId), external_id: externalId })
    }
    if (req.method === "GET" && path === "/v1/orders/") {
      const query = new URL(req.url ?? "/", "http://fake").searchParams
      const wanted = [...query.entries()].flatMap(([key, value]) => {
        const name = /^metadata\[([^\]]+)\]$/.exec(key)
        return name === null ? [] : [[name[1]!, value] as const]
      })
      const items = [...orders.values()].filter(
        (order) =>
          (!query.has("customer_id") || query.getAll("customer_id").includes(order.customer_id)) &&
          (!query.has("external_customer_id") ||
            query.getAll("external_customer_id").includes(order.customer.external_id)) &&
          wanted.every(([key, value]) => String(order.metadata[key]) === value)
      )
      return json(res, 200, { items, pagination: { total_count: items.length, max_page: 1 } })
    }
    if (req.method === "POST" && path === "/v1/orders/") {
      if (!fake.offSessionCharges) {
        return json(res, 403, { error: "OffSessionChargesNotEnabled", detail: "Off-session charges are not enabled" })
      }
      const invalid = (loc: string, msg: string) =>
        json(res, 422, {
          error: "PolarRequestValidationError",
          detail: [{ type: "value_error", loc: ["body", loc], msg }]
        })
      const product = typeof body?.product_id === "string" ? products.get(body.product_id) : undefined
      if (product === undefined) return invalid("product_id", "Product does not exist.")
      if (product.recurring) return invalid("product_id", "Subscription products are not supported.")
      if (product.price === "custom")
        return invalid("product_id", "Off-session charges only support fixed-price products.")
      const owner = typeof body?.customer_id === "string" ? externalOf(body.customer_id) : undefined
      if (owner === undefined) return invalid("customer_id", "Customer does not exist.")
      const amount = body?.amount ?? (product.price === "free" ? 0 : 1000)
      if (!Number.isInteger(amount) || (amount !== 0 && amount < 50)) return invalid("amount", "below the minimum")
      const metadata = body?.metadata ?? {}
      if (typeof metadata !== "object" || Array.isArray(metadata)) return invalid("metadata", "not an object")
      const order: FakePolarOrder = {
        id: id("ord"),
        status: "draft",
        customer_id: body.customer_id,
        product_id: body.product_id,
        amount,
        currency: "usd",
        billing_reason: "purchase",
        metadata,
        created_at: new Date().toISOString(),
        customer: { id: body.customer_id, external_id: owner }
      }
      orders.set(order.id, order)
      return json(res, 201, order)
    }
    const finalize = /^\/v1\/orders\/([^/]+)\/finalize$/.exec(path)
    if (req.method === "POST" && finalize !== null) {
      const order = orders.get(decodeURIComponent(finalize[1]!))
      if (order === undefined) return json(res, 404, { error: "ResourceNotFound", detail: "Not found" })
      if (order.status !== "draft") {
        return json(res, 412, { error: "OrderNotDraft", detail: `Order ${order.id} is not in draft status` })
      }
      if (!fake.offSessionCharges) {
        return json(res, 403, { error: "OffSessionChargesNotEnabled", detail: "Off-session charges are not enabled" })
      }
      const owner = order.customer.external_id
      if (!paymentMethods.has(owner)) {
        return json(res, 402, { error: "PaymentFailed", detail: "Payment failed with reason: missing_payment_method." })
      }
      if (declines.has(owner)) {
        return json(res, 402, { error: "PaymentFailed", detail: "Payment failed with reason: card_error." })
      }
      order.status = "paid"
      if (fake.webhookUrl !== undefined) {
        const delivery = fake
          .deliver(fake.webhookUrl, { type: "order.paid", data: { ...order } })
          .catch(() => undefined)
        deliveries.add(delivery)
        void delivery.finally(() => deliveries.delete(delivery))
      }
      if (fake.dropNextFinalizeAnswer) {
        fake.dropNextFinalizeAnswer = false
        return req.socket.destroy()
      }
      return json(res, 200, order)
    }
    const match = /^\/v1\/subscriptions\/([^/]+)$/.exec(path)
    if (req.method === "PATCH" && match !== null) {
      const subscription = subscriptions.get(decodeURIComponent(match[1]!))
      if (subscription === undefined) return json(res, 404, { error: "ResourceNotFound", detail: "Not found" })
      if (typeof body?.cancel_at_period_end === "boolean") {
        subscription.cancel_at_period_end = body.cancel_at_period_end
      }
      return json(res, 200, { ...subscription })
    }
    return json(res, 404, { error: "ResourceNotFound", detail: "Not found" })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))

  const fake: FakePolar = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    token,
    webhookSecret,
    requests,
    subscriptions,
    customers,
    outage: undefined,
    products,
    orders,
    paymentMethods,
    declines,
    offSessionCharges: true,
    dropNextFinalizeAnswer: false,
    webhookUrl: undefined,
    settled: async () => {
      while (deliveries.size > 0) await Promise.all([...deliveries])
    },
    subscribe: (orgId, status = "active") => {
      customers.add(orgId)
      const existing = [...subscriptions.values()].find((s) => s.customer.external_id === orgId)
      const subscription: FakePolarSubscription = {
        id: existing?.id ?? id("sub"),
        status,
        current_period_end: new Date(Date.now() + 30 * 24 * hourMs).toISOString(),
        cancel_at_period_end: existing?.cancel_at_period_end ?? false,
        customer: { external_id: orgId }
      }
      subscriptions.set(subscription.id, subscription)
      return subscription
    },
    deliver: async (url, event, delivery = {}) => {
      const webhookId = delivery.id ?? id("msg")
      const timestamp = String(delivery.timestamp ?? Math.floor(Date.now() / 1000))
      const body = JSON.stringify({ type: event.type, timestamp: new Date().toISOString(), data: event.data })
      const key = Billing.StandardWebhooks.keyOfSecretText(delivery.secret ?? webhookSecret)
      const signature =
        delivery.signature ?? (await Effect.runPromise(Billing.StandardWebhooks.sign(key, webhookId, timestamp, body)))
      const response = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "webhook-id": webhookId,
          "webhook-timestamp": timestamp,
          "webhook-signature": signature
        },
        body: delivery.tamperedBody ?? body
      })
      const answer = await response.text()
      let parsed: any = answer
      try {
        parsed = JSON.parse(answer)
      } catch {
        // not JSON: keep the text
      }
      return { status: response.status, body: parsed, id: webhookId }
    },
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  }
  return fake
}
