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

export interface FakePolarOptions {
  /** The organization access token the fake accepts; default `"polar_oat_test"`. */
  readonly token?: string
  /** `SERVICE_BILLING_WEBHOOK_SECRET` as Polar shows it; default a random `whsec_...`. */
  readonly webhookSecret?: string
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
 */
export const startFakePolar = async (options: FakePolarOptions = {}): Promise<FakePolar> => {
  const token = options.token ?? "polar_oat_test"
  const webhookSecret = options.webhookSecret ?? `whsec_${randomBytes(24).toString("base64")}`
  const requests: Array<FakePolarRequest> = []
  const subscriptions = new Map<string, FakePolarSubscription>()
  const customers = new Set<string>()
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
