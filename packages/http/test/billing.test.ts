import * as Pg from "@hostplane/adapters-pg"
import { layer as pgDatabase } from "@hostplane/adapters-pg/PgDatabase"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { Billing, Kernel } from "@hostplane/core"
import { ObjectStoreMemory } from "@hostplane/testkit"
import { Effect, Layer, ManagedRuntime } from "effect"
import { createHmac } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { creditOf, orgIdOf, publicUrl, returnTo, withPolar, proProduct } from "./support/polar.ts"
import {
  auditOf,
  client,
  logCapture,
  startTestServer,
  type Suite,
  type TestServer,
  unique,
  useSuite
} from "./support/TestServer.ts"

const nodeToken = "node-token-billing-8d2"
const mailDomain = "mail.billing.example.test"

describe.each(backends)("spec 4.15 billing (%s)", (_name, stores) => {
  const { holder, settings, gateway } = withPolar()
  const { lines: logs, layer: captureLogs } = logCapture()
  const suite = useSuite(
    stores,
    { ...settings, node: { token: nodeToken }, mail: { mailDomain } },
    captureLogs,
    undefined,
    { providers: [gateway, ObjectStoreMemory.layer] }
  )
  const { api, newOrg, withRole } = suite
  const hook = () => `${suite.server.url}/v1/hooks/billing`
  const polar = () => holder.polar

  /** Delivers `subscription.<kind>` for the org as Polar would after a payment. */
  const subscriptionEvent = async (slug: string, status: string, kind = "updated") => {
    const orgId = await orgIdOf(suite.server, slug)
    const subscription = polar().subscribe(orgId, status)
    return polar().deliver(hook(), { type: `subscription.${kind}`, data: { ...subscription } })
  }

  /** Makes `slug` (a fresh org by default) pro through a signed `subscription.active`. */
  const proOrg = async (given?: string) => {
    const slug = given ?? (await newOrg())
    const reply = await subscriptionEvent(slug, "active", "active")
    expect(reply).toMatchObject({ status: 200, body: { applied: true } })
    return slug
  }

  const creditOrder = (orgId: string, microCents: string, slug?: string) => ({
    type: "order.paid",
    data: {
      id: `ord_${Math.random().toString(36).slice(2)}`,
      status: "paid",
      customer: { external_id: orgId },
      metadata: { kind: "ai_credit", microCents, ...(slug === undefined ? {} : { orgSlug: slug }) }
    }
  })

  describe("webhook", () => {
    it("subscription.active with status active makes the org pro: 200 { applied: true }", async () => {
      const slug = await newOrg()
      const reply = await subscriptionEvent(slug, "active", "active")
      expect(reply.status).toBe(200)
      expect(reply.body).toEqual({ applied: true })
      const org = await api.get(`/v1/orgs/${slug}/billing`, { token: suite.admin.token })
      expect(org.body).toMatchObject({ plan: "pro", status: "active", cancelAtPeriodEnd: false })
      expect(new Date(org.body.periodEnd).getTime()).toBeGreaterThan(Date.now())
    })

    it("trialing and past_due also give pro; any other status gives free; an unchanged plan is applied: false", async () => {
      const slug = await newOrg()
      expect((await subscriptionEvent(slug, "trialing")).body).toEqual({ applied: true })
      // BillingStatus.status has three values: a trial shows as active.
      const trial = await api.get(`/v1/orgs/${slug}/billing`, { token: suite.admin.token })
      expect(trial.body).toMatchObject({ plan: "pro", status: "active" })
      expect((await subscriptionEvent(slug, "past_due")).body).toEqual({ applied: false })
      const pastDue = await api.get(`/v1/orgs/${slug}/billing`, { token: suite.admin.token })
      expect(pastDue.body).toMatchObject({ plan: "pro", status: "past_due" })
      expect((await subscriptionEvent(slug, "unpaid")).body).toEqual({ applied: true })
      const unpaid = await api.get(`/v1/orgs/${slug}/billing`, { token: suite.admin.token })
      expect(unpaid.body).toMatchObject({ plan: "free", status: "canceled" })
      expect((await subscriptionEvent(slug, "canceled")).body).toEqual({ applied: false })
    })

    it("the org is data.customer.external_id, else data.metadata.orgSlug; an unknown org is applied: false", async () => {
      const slug = await newOrg()
      const bySlug = await polar().deliver(hook(), {
        type: "subscription.active",
        data: { id: "sub_by_slug", status: "active", cancel_at_period_end: false, metadata: { orgSlug: slug } }
      })
      expect(bySlug.body).toEqual({ applied: true })
      const unknown = await polar().deliver(hook(), {
        type: "subscription.active",
        data: { id: "sub_x", status: "active", customer: { external_id: "org_doesnotexist" } }
      })
      expect(unknown).toMatchObject({ status: 200, body: { applied: false } })
      const unknownType = await polar().deliver(hook(), {
        type: "checkout.updated",
        data: { id: "chk_1", customer: { external_id: await orgIdOf(suite.server, slug) } }
      })
      expect(unknownType).toMatchObject({ status: 200, body: { applied: false } })
    })

    it("a repeated webhook-id is 200 applied: false and ignored, whatever its body", async () => {
      const slug = await newOrg()
      const orgId = await orgIdOf(suite.server, slug)
      const first = await polar().deliver(hook(), creditOrder(orgId, "500000000"))
      expect(first.body).toEqual({ applied: true })
      const again = await polar().deliver(hook(), creditOrder(orgId, "500000000"), { id: first.id })
      expect(again).toMatchObject({ status: 200, body: { applied: false } })
      const other = await polar().deliver(hook(), creditOrder(orgId, "1000000000"), { id: first.id })
      expect(other).toMatchObject({ status: 200, body: { applied: false } })
      const { credit, ledger } = await creditOf(suite.server, orgId)
      expect(credit.balanceMicroCents).toBe(500_000_000)
      expect(ledger.map((row) => [row.kind, row.amountMicroCents])).toEqual([["topup", 500_000_000]])
    })

    it("order.paid for AI credit raises the balance with a topup row and records the payment method", async () => {
      const slug = await newOrg()
      const orgId = await orgIdOf(suite.server, slug)
      expect((await creditOf(suite.server, orgId)).credit.hasPaymentMethod).toBe(false)
      expect((await polar().deliver(hook(), creditOrder(orgId, "1000000000"))).body).toEqual({ applied: true })
      expect((await polar().deliver(hook(), creditOrder(orgId, "2500000000"))).body).toEqual({ applied: true })
      const { credit, ledger } = await creditOf(suite.server, orgId)
      expect(credit).toMatchObject({ balanceMicroCents: 3_500_000_000, hasPaymentMethod: true })
      expect(ledger.map((row) => [row.kind, row.amountMicroCents, row.projectName, row.model])).toEqual([
        ["topup", 2_500_000_000, null, null],
        ["topup", 1_000_000_000, null, null]
      ])
      // An order that is not AI credit (the Pro plan's) changes no balance; a bad amount neither.
      const plain = await polar().deliver(hook(), {
        type: "order.paid",
        data: { id: "ord_pro", customer: { external_id: orgId }, metadata: {} }
      })
      expect(plain.body).toEqual({ applied: false })
      expect((await polar().deliver(hook(), creditOrder(orgId, "-5"))).body).toEqual({ applied: false })
      expect((await polar().deliver(hook(), creditOrder(orgId, "12.5"))).body).toEqual({ applied: false })
      expect((await creditOf(suite.server, orgId)).credit.balanceMicroCents).toBe(3_500_000_000)
    })

    it("concurrent deliveries of one webhook-id apply once", async () => {
      const slug = await newOrg()
      const orgId = await orgIdOf(suite.server, slug)
      const id = `msg_race_${Math.random().toString(36).slice(2)}`
      const replies = await Promise.all(
        Array.from({ length: 12 }, () => polar().deliver(hook(), creditOrder(orgId, "500000000"), { id }))
      )
      expect(replies.map((reply) => reply.status)).toEqual(Array.from({ length: 12 }, () => 200))
      expect(replies.filter((reply) => reply.body.applied === true)).toHaveLength(1)
      const { credit, ledger } = await creditOf(suite.server, orgId)
      expect(credit.balanceMicroCents).toBe(500_000_000)
      expect(ledger).toHaveLength(1)
    })

    it("concurrent deliveries with distinct ids all apply: the balance is their sum", async () => {
      const slug = await newOrg()
      const orgId = await orgIdOf(suite.server, slug)
      const replies = await Promise.all(
        Array.from({ length: 10 }, () => polar().deliver(hook(), creditOrder(orgId, "500000000")))
      )
      expect(replies.every((reply) => reply.body.applied === true)).toBe(true)
      const { credit, ledger } = await creditOf(suite.server, orgId)
      expect(credit.balanceMicroCents).toBe(5_000_000_000)
      expect(ledger.reduce((sum, row) => sum + row.amountMicroCents, 0)).toBe(5_000_000_000)
    })

    it("forged, tampered, stale, future and unsigned deliveries are 403 and change nothing", async () => {
      const slug = await newOrg()
      const orgId = await orgIdOf(suite.server, slug)
      const event = creditOrder(orgId, "500000000")
      const now = Math.floor(Date.now() / 1000)
      const forged = await polar().deliver(hook(), event, { secret: "whsec_not-the-secret" })
      const base64Key = await polar().deliver(hook(), event, {
        // Signed as plain Standard Webhooks libraries derive the key (base64-decoded): not how Polar signs.
        signature: await Effect.runPromise(
          Billing.StandardWebhooks.sign(
            Billing.StandardWebhooks.keyOfSecretBase64(btoa("0123456789abcdef0123456789abcdef")),
            "msg_forged",
            String(now),
            JSON.stringify(event)
          )
        )
      })
      const tampered = await polar().deliver(hook(), event, {
        tamperedBody: JSON.stringify(creditOrder(orgId, "10000000000"))
      })
      const stale = await polar().deliver(hook(), event, { timestamp: now - 6 * 60 })
      const future = await polar().deliver(hook(), event, { timestamp: now + 6 * 60 })
      const garbage = await polar().deliver(hook(), event, { signature: "v1,!!!not-base64" })
      const wrongVersion = await polar().deliver(hook(), event, { signature: "v2,abc=" })
      const unsigned = await api.post("/v1/hooks/billing", event)
      for (const reply of [forged, base64Key, tampered, stale, future, garbage, wrongVersion, unsigned]) {
        expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 403, code: "forbidden" })
      }
      expect((await creditOf(suite.server, orgId)).credit.balanceMicroCents).toBe(0)
      // Within the tolerance either way it is accepted; a forged id was never recorded, so its retry still applies.
      expect((await polar().deliver(hook(), event, { timestamp: now - 4 * 60 })).body).toEqual({ applied: true })
      expect((await polar().deliver(hook(), event, { timestamp: now + 4 * 60 })).body).toEqual({ applied: true })
      expect((await polar().deliver(hook(), event, { id: "msg_forged" })).body).toEqual({ applied: true })
    })

    it("a delivery signed by an HMAC of its own as Polar's sender signs (key = UTF-8 of the whole whsec_ secret) applies", async () => {
      const slug = await newOrg()
      const orgId = await orgIdOf(suite.server, slug)
      const secret = polar().webhookSecret
      // Signed with node:crypto, not with the server's own signer: what a Polar delivery carries.
      const signed = (key: Buffer, id: string, timestamp: string, body: string) =>
        `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`
      const send = (id: string, body: string, signature: string, timestamp: string) =>
        api.post("/v1/hooks/billing", undefined, {
          raw: body,
          headers: {
            "content-type": "application/json",
            "webhook-id": id,
            "webhook-timestamp": timestamp,
            "webhook-signature": signature
          }
        })
      const now = String(Math.floor(Date.now() / 1000))
      const body = JSON.stringify(creditOrder(orgId, "500000000"))
      const asPolar = Buffer.from(secret, "utf8")
      // The base64 after whsec_ decoded, as plain Standard Webhooks libraries take the key: not Polar's key.
      const decoded = Buffer.from(secret.slice("whsec_".length), "base64")
      const id = `msg_hmac_${orgId}`
      const refused = await send(id, body, signed(decoded, id, now, body), now)
      expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 403, code: "forbidden" })
      // Several entries (a key rotation): any v1 entry that matches is enough.
      const both = `${signed(decoded, id, now, body)} ${signed(asPolar, id, now, body)}`
      const accepted = await send(id, body, both, now)
      expect({ status: accepted.status, body: accepted.body }).toEqual({ status: 200, body: { applied: true } })
      expect((await creditOf(suite.server, orgId)).credit.balanceMicroCents).toBe(500_000_000)
      // The signature covers id, timestamp and body: the same signature with another id is 403.
      const moved = await send(`${id}_2`, body, signed(asPolar, id, now, body), now)
      expect(moved.status).toBe(403)
    })

    it("a signed body that is not a webhook is 400", async () => {
      const now = String(Math.floor(Date.now() / 1000))
      const key = Billing.StandardWebhooks.keyOfSecretText(polar().webhookSecret)
      for (const body of ["not json", "[]", '{"type":"order.paid"}']) {
        const signature = await Effect.runPromise(
          Billing.StandardWebhooks.sign(key, `msg_bad_${body.length}`, now, body)
        )
        const reply = await api.post("/v1/hooks/billing", undefined, {
          raw: body,
          headers: { "webhook-id": `msg_bad_${body.length}`, "webhook-timestamp": now, "webhook-signature": signature }
        })
        expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 400, code: "bad_request" })
      }
    })

    it("an older subscription event delivered after a newer one does not undo it", async () => {
      const slug = await newOrg()
      const orgId = await orgIdOf(suite.server, slug)
      const newer = await polar().deliver(hook(), {
        type: "subscription.updated",
        data: { id: "sub_order", status: "active", customer: { external_id: orgId } }
      })
      expect(newer.body).toEqual({ applied: true })
      const key = Billing.StandardWebhooks.keyOfSecretText(polar().webhookSecret)
      const body = JSON.stringify({
        type: "subscription.updated",
        timestamp: new Date(Date.now() - 60_000).toISOString(),
        data: { id: "sub_order", status: "incomplete", customer: { external_id: orgId } }
      })
      const now = String(Math.floor(Date.now() / 1000))
      const older = await api.post("/v1/hooks/billing", undefined, {
        raw: body,
        headers: {
          "webhook-id": "msg_older_" + orgId,
          "webhook-timestamp": now,
          "webhook-signature": await Effect.runPromise(
            Billing.StandardWebhooks.sign(key, "msg_older_" + orgId, now, body)
          )
        }
      })
      expect(older.body).toEqual({ applied: false })
      expect((await api.get(`/v1/orgs/${slug}/billing`, { token: suite.admin.token })).body.plan).toBe("pro")
    })

    it("the webhook secret and the customer session token reach no log, audit row or response listing", async () => {
      const slug = await proOrg()
      const session = await api.post(`/v1/orgs/${slug}/billing/session`, undefined, { token: suite.admin.token })
      expect(session.status).toBe(200)
      const audit = await suite.server.run(Effect.flatMap(Effect.service(Kernel.AuditLog), (log) => log.list({})))
      const everything = JSON.stringify({
        logs,
        audit,
        status: (await api.get(`/v1/orgs/${slug}/billing`, { token: suite.admin.token })).body
      })
      expect(everything).not.toContain(polar().webhookSecret)
      expect(everything).not.toContain(session.body.token)
      expect(everything).not.toContain(polar().token)
    })
  })

  describe("plan changes apply limits at once", () => {
    it("a pro org may create a fourth project at once; back on free the next create is 409 project_limit", async () => {
      const slug = await newOrg()
      for (let i = 0; i < 3; i++) await suite.newProject(slug)
      const refused = await api.post(`/v1/orgs/${slug}/projects`, { name: "fourth" }, { token: suite.admin.token })
      expect(refused.body).toMatchObject({ code: "project_limit", details: { limit: 3, count: 3, plan: "free" } })
      await subscriptionEvent(slug, "active", "active")
      const orgs = await api.get("/v1/orgs", { token: suite.admin.token })
      expect(orgs.body.items.find((org: { slug: string }) => org.slug === slug)).toMatchObject({
        plan: "pro",
        projectLimit: 50
      })
      expect(
        (await api.post(`/v1/orgs/${slug}/projects`, { name: "fourth" }, { token: suite.admin.token })).status
      ).toBe(201)
      await subscriptionEvent(slug, "canceled")
      const fifth = await api.post(`/v1/orgs/${slug}/projects`, { name: "fifth" }, { token: suite.admin.token })
      expect(fifth.body).toMatchObject({ code: "project_limit", details: { limit: 3, count: 4, plan: "free" } })
    })

    it("a plan change raises the node revision of the org's projects: hourlyCap and quotaBytes refresh", async () => {
      const asNode = { token: nodeToken }
      const state = async (after: number) => {
        const reply = await api.get(`/v1/node/state?after=${after}`, asNode)
        expect(reply.status).toBe(200)
        return reply.body as { revision: number; projects: Array<{ projectId: string; bindings: any }> }
      }
      const slug = await newOrg()
      const granted = await suite.newProject(slug)
      const bare = await suite.newProject(slug)
      const other = await suite.newProject(await newOrg())
      const base = `/v1/orgs/${slug}/projects/${granted.name}`
      for (const addon of ["email", "storage"]) {
        expect((await api.post(`${base}/${addon}`, undefined, { token: suite.admin.token })).status).toBe(200)
      }
      const bindingsOf = (changed: Awaited<ReturnType<typeof state>>) => ({
        changed: changed.projects.map((p) => p.projectId).sort(),
        email: changed.projects.find((p) => p.projectId === granted.id)?.bindings.email,
        storage: changed.projects.find((p) => p.projectId === granted.id)?.bindings.storage
      })
      const onFree = (await state(0)).revision
      await proOrg(slug)
      const pro = await state(onFree)
      expect(bindingsOf(pro)).toEqual({
        changed: [granted.id, bare.id].sort(),
        email: expect.objectContaining({ hourlyCap: 1000 }),
        storage: expect.objectContaining({ quotaBytes: 100 * 1024 ** 3 })
      })
      expect(pro.projects.map((p) => p.projectId)).not.toContain(other.id)
      // An event that leaves the plan as it is changes nothing a node applies.
      expect((await subscriptionEvent(slug, "past_due")).body).toEqual({ applied: false })
      expect((await state(pro.revision)).projects).toEqual([])
      expect((await subscriptionEvent(slug, "canceled")).body).toEqual({ applied: true })
      expect(bindingsOf(await state(pro.revision))).toEqual({
        changed: [granted.id, bare.id].sort(),
        email: expect.objectContaining({ hourlyCap: 50 }),
        storage: expect.objectContaining({ quotaBytes: 1024 ** 3 })
      })
    })
  })

  describe("status", () => {
    itChecksRoles(suite, {
      name: "GET billing",
      min: "viewer",
      request: (slug) => ({ method: "GET", path: `/v1/orgs/${slug}/billing` }),
      ok: 200
    })

    it("a free org: plan free, status null, enabled, not sandbox, both plans' limits of decisions.md part 3", async () => {
      const slug = await newOrg()
      const reply = await api.get(`/v1/orgs/${slug}/billing`, { token: suite.admin.token })
      expect(reply.body).toEqual({
        plan: "free",
        status: null,
        periodEnd: null,
        cancelAtPeriodEnd: false,
        enabled: true,
        sandbox: false,
        limits: {
          free: {
            projectLimit: 3,
            storageQuotaBytes: 1024 ** 3,
            mailHourlyCap: 50,
            mailKeepDays: 30,
            ai: { maxOutputTokens: 4096, maxInputTokens: 32768, requestsPerMinute: 20, dailySpendMicroCents: 100000000 }
          },
          pro: {
            projectLimit: 50,
            storageQuotaBytes: 100 * 1024 ** 3,
            mailHourlyCap: 1000,
            mailKeepDays: 365,
            ai: { maxOutputTokens: 0, maxInputTokens: 0, requestsPerMinute: 600, dailySpendMicroCents: 10000000000 }
          }
        }
      })
    })
  })

  describe("checkout", () => {
    itChecksRoles(suite, {
      name: "POST billing/checkout",
      min: "admin",
      request: (slug) => ({ method: "POST", path: `/v1/orgs/${slug}/billing/checkout`, body: { returnTo } }),
      ok: 200
    })

    it("answers Polar's checkout url; Polar gets the pro product, success_url, the org as external customer", async () => {
      const slug = await newOrg()
      const orgId = await orgIdOf(suite.server, slug)
      const reply = await api.post(`/v1/orgs/${slug}/billing/checkout`, { returnTo }, { token: suite.admin.token })
      expect(reply.status).toBe(200)
      expect(reply.body.url).toMatch(new RegExp(`^${polar().url}/checkout/chk_`))
      const sent = polar().requests.findLast((request) => request.path === "/v1/checkouts/")
      expect(sent).toMatchObject({
        method: "POST",
        token: polar().token,
        body: {
          products: [proProduct],
          success_url: returnTo,
          external_customer_id: orgId,
          metadata: { orgSlug: slug }
        }
      })
      // Paying does not change the plan: only the webhook does.
      expect((await api.get(`/v1/orgs/${slug}/billing`, { token: suite.admin.token })).body.plan).toBe("free")
    })

    it("returnTo must be under SERVICE_PUBLIC_URL, parsed as a URL: else 400", async () => {
      const slug = await newOrg()
      for (const bad of [
        "https://evil.example/app",
        "https://console.example.test@evil.example/app",
        "https://console.example.test/app@evil.example",
        "https://console.example.test/application",
        "https://console.example.test/",
        "http://console.example.test/app/x",
        "https://user:pw@console.example.test/app/x",
        "/app/relative",
        "not a url"
      ]) {
        const reply = await api.post(
          `/v1/orgs/${slug}/billing/checkout`,
          { returnTo: bad },
          { token: suite.admin.token }
        )
        expect({ bad, status: reply.status, code: reply.body.code }).toEqual({ bad, status: 400, code: "bad_request" })
      }
      const missing = await api.post(`/v1/orgs/${slug}/billing/checkout`, {}, { token: suite.admin.token })
      expect(missing.status).toBe(400)
      for (const good of [publicUrl, `${publicUrl}/`, `${publicUrl}/x?y=1#z`]) {
        const reply = await api.post(
          `/v1/orgs/${slug}/billing/checkout`,
          { returnTo: good },
          { token: suite.admin.token }
        )
        expect({ good, status: reply.status }).toEqual({ good, status: 200 })
      }
    })

    it("a pro org is 409 already_pro", async () => {
      const slug = await proOrg()
      const reply = await api.post(`/v1/orgs/${slug}/billing/checkout`, { returnTo }, { token: suite.admin.token })
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 409, code: "already_pro" })
    })

    it("Polar down or refusing is 502 billing_unavailable", async () => {
      const slug = await newOrg()
      for (const outage of [500, 503, 401] as const) {
        polar().outage = outage
        const reply = await api.post(`/v1/orgs/${slug}/billing/checkout`, { returnTo }, { token: suite.admin.token })
        polar().outage = undefined
        expect({ outage, status: reply.status, code: reply.body.code }).toEqual({
          outage,
          status: 502,
          code: "billing_unavailable"
        })
      }
    })

    it("Polar not answering in time is 502 billing_unavailable", async () => {
      const slug = await newOrg()
      polar().outage = "hang"
      const reply = await api.post(`/v1/orgs/${slug}/billing/checkout`, { returnTo }, { token: suite.admin.token })
      polar().outage = undefined
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 502, code: "billing_unavailable" })
    })
  })

  describe("portal and customer session", () => {
    /** Gives `slug` (a fresh org by default) billing history: a paid credit order Polar knows the customer of. */
    const paidOrg = async (given?: string) => {
      const slug = given ?? (await newOrg())
      const orgId = await orgIdOf(suite.server, slug)
      polar().customers.add(orgId)
      expect((await polar().deliver(hook(), creditOrder(orgId, "500000000"))).body).toEqual({ applied: true })
      return slug
    }

    itChecksRoles(suite, {
      name: "POST billing/portal",
      min: "admin",
      setup: (slug) => paidOrg(slug),
      request: (slug) => ({ method: "POST", path: `/v1/orgs/${slug}/billing/portal`, body: {} }),
      ok: 200
    })

    it("portal answers Polar's one-time portal url (no-store), passing returnTo; a never-paid org is 404", async () => {
      const slug = await paidOrg()
      const reply = await api.post(`/v1/orgs/${slug}/billing/portal`, { returnTo }, { token: suite.admin.token })
      expect(reply.status).toBe(200)
      expect(reply.headers.get("cache-control")).toBe("no-store")
      expect(reply.body.url).toMatch(new RegExp(`^${polar().url}/portal\\?customer_session_token=polar_cst_`))
      expect(polar().requests.findLast((r) => r.path === "/v1/customer-sessions/")?.body).toEqual({
        external_customer_id: await orgIdOf(suite.server, slug),
        return_url: returnTo
      })
      const never = await newOrg()
      const refused = await api.post(`/v1/orgs/${never}/billing/portal`, {}, { token: suite.admin.token })
      expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 404, code: "not_found" })
      const badReturn = await api.post(
        `/v1/orgs/${slug}/billing/portal`,
        { returnTo: "https://evil.example/" },
        { token: suite.admin.token }
      )
      expect(badReturn.status).toBe(400)
    })

    it("a paying org Polar does not know is 404; Polar down is 502 billing_unavailable for portal and session", async () => {
      const slug = await paidOrg()
      polar().customers.delete(await orgIdOf(suite.server, slug))
      const unknown = await api.post(`/v1/orgs/${slug}/billing/session`, undefined, { token: suite.admin.token })
      expect({ status: unknown.status, code: unknown.body.code }).toEqual({ status: 404, code: "not_found" })
      const unknownPortal = await api.post(`/v1/orgs/${slug}/billing/portal`, {}, { token: suite.admin.token })
      expect({ status: unknownPortal.status, code: unknownPortal.body.code }).toEqual({
        status: 404,
        code: "not_found"
      })
      polar().customers.add(await orgIdOf(suite.server, slug))
      for (const outage of [503, 500, "hang"] as const) {
        polar().outage = outage
        const down = await api.post(`/v1/orgs/${slug}/billing/portal`, {}, { token: suite.admin.token })
        const session = await api.post(`/v1/orgs/${slug}/billing/session`, undefined, { token: suite.admin.token })
        polar().outage = undefined
        expect([outage, down.status, down.body.code, session.status, session.body.code]).toEqual([
          outage,
          502,
          "billing_unavailable",
          502,
          "billing_unavailable"
        ])
      }
      expect((await api.post(`/v1/orgs/${slug}/billing/session`, undefined, { token: suite.admin.token })).status).toBe(
        200
      )
    })

    itChecksRoles(suite, {
      name: "POST billing/session",
      min: "admin",
      setup: (slug) => paidOrg(slug),
      request: (slug) => ({ method: "POST", path: `/v1/orgs/${slug}/billing/session` }),
      ok: 200
    })

    it("session answers Polar's customer session { token, expiresAt } (one hour, no-store); no history is 404", async () => {
      const slug = await paidOrg()
      const reply = await api.post(`/v1/orgs/${slug}/billing/session`, undefined, { token: suite.admin.token })
      expect(reply.status).toBe(200)
      expect(reply.headers.get("cache-control")).toBe("no-store")
      expect(Object.keys(reply.body).sort()).toEqual(["expiresAt", "token"])
      expect(reply.body.token).toMatch(/^polar_cst_/)
      const lifetime = new Date(reply.body.expiresAt).getTime() - Date.now()
      expect(lifetime).toBeGreaterThan(59 * 60_000)
      expect(lifetime).toBeLessThanOrEqual(60 * 60_000)
      const never = await newOrg()
      const refused = await api.post(`/v1/orgs/${never}/billing/session`, undefined, { token: suite.admin.token })
      expect(refused.status).toBe(404)
    })
  })

  describe("cancel", () => {
    itChecksRoles(suite, {
      name: "POST billing/cancel",
      min: "admin",
      setup: (slug) => proOrg(slug),
      request: (slug) => ({ method: "POST", path: `/v1/orgs/${slug}/billing/cancel`, body: { cancel: true } }),
      ok: 200
    })

    it("cancel true schedules the end at period end at once; false withdraws it; Pro stays", async () => {
      const slug = await proOrg()
      const cancel = await api.post(`/v1/orgs/${slug}/billing/cancel`, { cancel: true }, { token: suite.admin.token })
      expect(cancel.status).toBe(200)
      expect(cancel.body).toMatchObject({ status: "active", cancelAtPeriodEnd: true })
      expect(new Date(cancel.body.periodEnd).getTime()).toBeGreaterThan(Date.now())
      const status = await api.get(`/v1/orgs/${slug}/billing`, { token: suite.admin.token })
      expect(status.body).toMatchObject({ plan: "pro", status: "active", cancelAtPeriodEnd: true })
      const resume = await api.post(`/v1/orgs/${slug}/billing/cancel`, { cancel: false }, { token: suite.admin.token })
      expect(resume.body).toMatchObject({ status: "active", cancelAtPeriodEnd: false })
      const sent = polar()
        .requests.filter((r) => r.method === "PATCH")
        .slice(-2)
      expect(sent.map((r) => r.body)).toEqual([{ cancel_at_period_end: true }, { cancel_at_period_end: false }])
      expect((await api.get(`/v1/orgs/${slug}/billing`, { token: suite.admin.token })).body.cancelAtPeriodEnd).toBe(
        false
      )
    })

    it("Polar's webhook agrees later: a cancel stays scheduled, a withdrawal at Polar shows, the period's end makes the org free", async () => {
      const slug = await proOrg()
      const orgId = await orgIdOf(suite.server, slug)
      const token = suite.admin.token
      expect((await api.post(`/v1/orgs/${slug}/billing/cancel`, { cancel: true }, { token })).status).toBe(200)
      const record = [...polar().subscriptions.values()].find((s) => s.customer.external_id === orgId)!
      expect(record.cancel_at_period_end).toBe(true)
      const updated = () => polar().deliver(hook(), { type: "subscription.updated", data: { ...record } })
      // The webhook that follows the cancel says the same: nothing to apply, the end stays scheduled.
      expect((await updated()).body).toEqual({ applied: false })
      expect((await api.get(`/v1/orgs/${slug}/billing`, { token })).body).toMatchObject({
        plan: "pro",
        cancelAtPeriodEnd: true
      })
      // Withdrawn in Polar's customer portal: the webhook is what tells.
      record.cancel_at_period_end = false
      expect((await updated()).body).toEqual({ applied: false })
      expect((await api.get(`/v1/orgs/${slug}/billing`, { token })).body.cancelAtPeriodEnd).toBe(false)
      // Scheduled again, then the period ends: Polar's canceled makes the org free; cancel is then 409 not_pro.
      expect((await api.post(`/v1/orgs/${slug}/billing/cancel`, { cancel: true }, { token })).status).toBe(200)
      record.status = "canceled"
      expect((await updated()).body).toEqual({ applied: true })
      expect((await api.get(`/v1/orgs/${slug}/billing`, { token })).body).toMatchObject({
        plan: "free",
        status: "canceled"
      })
      const after = await api.post(`/v1/orgs/${slug}/billing/cancel`, { cancel: false }, { token })
      expect({ status: after.status, code: after.body.code }).toEqual({ status: 409, code: "not_pro" })
    })

    it("a free org is 409 not_pro; a body without boolean cancel is 400; Polar down is 502", async () => {
      const free = await newOrg()
      const notPro = await api.post(`/v1/orgs/${free}/billing/cancel`, { cancel: true }, { token: suite.admin.token })
      expect({ status: notPro.status, code: notPro.body.code }).toEqual({ status: 409, code: "not_pro" })
      const slug = await proOrg()
      const bad = await api.post(`/v1/orgs/${slug}/billing/cancel`, { cancel: "yes" }, { token: suite.admin.token })
      expect(bad.status).toBe(400)
      polar().outage = 500
      const down = await api.post(`/v1/orgs/${slug}/billing/cancel`, { cancel: true }, { token: suite.admin.token })
      polar().outage = undefined
      expect({ status: down.status, code: down.body.code }).toEqual({ status: 502, code: "billing_unavailable" })
      expect((await api.get(`/v1/orgs/${slug}/billing`, { token: suite.admin.token })).body.cancelAtPeriodEnd).toBe(
        false
      )
    })
  })

  describe("org delete", () => {
    it("an org with a live paid subscription is 409 active_subscription; once canceled it deletes", async () => {
      const slug = await proOrg()
      const refused = await api.delete(`/v1/orgs/${slug}`, { confirm: slug }, { token: suite.admin.token })
      expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 409, code: "active_subscription" })
      await subscriptionEvent(slug, "past_due")
      expect((await api.delete(`/v1/orgs/${slug}`, { confirm: slug }, { token: suite.admin.token })).status).toBe(409)
      await subscriptionEvent(slug, "canceled")
      expect((await api.delete(`/v1/orgs/${slug}`, { confirm: slug }, { token: suite.admin.token })).status).toBe(204)
      const deleted = await suite.server.run(
        Effect.flatMap(Effect.service(Kernel.AuditLog), (log) => log.list({ action: "org.delete" }))
      )
      expect(deleted.some((event) => event.target === slug)).toBe(true)
    })
  })

  it("billing writes no audit row (spec part 6 lists none); viewers and members cannot change billing", async () => {
    const slug = await proOrg()
    const member = await withRole(slug, "member")
    const refused = await api.post(`/v1/orgs/${slug}/billing/cancel`, { cancel: true }, { token: member.token })
    expect(refused.status).toBe(403)
    await api.post(`/v1/orgs/${slug}/billing/cancel`, { cancel: true }, { token: suite.admin.token })
    const actions = (await auditOf(suite.server, slug)).map((event) => event.action)
    expect(actions.filter((action) => action !== "org.create" && action !== "member.add")).toEqual([])
  })
})

describe("spec 4.15 billing off and sandbox", () => {
  describe("no Polar token, no webhook secret", () => {
    const suite = useSuite(backends[1]![1], { settings: { publicUrl } })
    const { api, newOrg } = suite

    it("the webhook is 501 billing_off without a secret", async () => {
      const reply = await api.post(
        "/v1/hooks/billing",
        { type: "order.paid", data: {} },
        {
          headers: { "webhook-id": "msg_1", "webhook-timestamp": "1", "webhook-signature": "v1,x" }
        }
      )
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 501, code: "billing_off" })
    })

    it("status says enabled false; checkout, portal, session and cancel are 501 billing_off", async () => {
      const slug = await newOrg()
      const status = await api.get(`/v1/orgs/${slug}/billing`, { token: suite.admin.token })
      expect(status.body).toMatchObject({ plan: "free", enabled: false, sandbox: false })
      const token = suite.admin.token
      for (const reply of [
        await api.post(`/v1/orgs/${slug}/billing/checkout`, { returnTo }, { token }),
        await api.post(`/v1/orgs/${slug}/billing/portal`, {}, { token }),
        await api.post(`/v1/orgs/${slug}/billing/session`, undefined, { token }),
        await api.post(`/v1/orgs/${slug}/billing/cancel`, { cancel: true }, { token })
      ]) {
        expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 501, code: "billing_off" })
      }
    })

    it("a bad returnTo is 400 even with billing off (validation first)", async () => {
      const slug = await newOrg()
      const reply = await api.post(
        `/v1/orgs/${slug}/billing/checkout`,
        { returnTo: "https://evil.example" },
        { token: suite.admin.token }
      )
      expect(reply.status).toBe(400)
    })
  })

  describe("a sandbox URL", () => {
    const { settings, gateway } = withPolar({ sandbox: true })
    const suite: Suite = useSuite(backends[1]![1], settings, undefined, undefined, { providers: [gateway] })

    it("a SERVICE_POLAR_URL containing sandbox sets sandbox: true", async () => {
      const slug = await suite.newOrg()
      const status = await suite.api.get(`/v1/orgs/${slug}/billing`, { token: suite.admin.token })
      expect(status.body).toMatchObject({ enabled: true, sandbox: true })
      const checkout = await suite.api.post(
        `/v1/orgs/${slug}/billing/checkout`,
        { returnTo },
        { token: suite.admin.token }
      )
      expect(checkout.status).toBe(200)
    })
  })
})

describe("spec 5.6 billing webhook on two replicas of one PostgreSQL database", () => {
  const { holder, settings, gateway } = withPolar()
  const database = ManagedRuntime.make(TestDatabase.layer)
  const servers: Array<TestServer> = []
  beforeAll(async () => {
    const { url } = await database.runPromise(Effect.service(TestDatabase))
    // Two servers, each with its own pool and services, on one database and one webhook secret.
    for (let i = 0; i < 2; i++) {
      servers.push(
        await startTestServer(Pg.layer.pipe(Layer.provideMerge(pgDatabase(url))), settings, undefined, undefined, {
          providers: [gateway]
        })
      )
    }
  })
  afterAll(async () => {
    for (const server of servers) await server.close()
    await database.dispose()
  })

  it("one webhook-id delivered to both at once applies once; the org's balance and plan agree on both", async () => {
    const [one, two] = servers as [TestServer, TestServer]
    const apiOne = client(one.url)
    const apiTwo = client(two.url)
    const admin = await apiOne.login(unique("admin"))
    const slug = unique("org")
    expect((await apiOne.post("/v1/orgs", { name: "Replicas", slug }, { token: admin.token })).status).toBe(201)
    const orgId = await orgIdOf(one, slug)
    const deliverBoth = async (
      event: { readonly type: string; readonly data: Record<string, unknown> },
      id: string
    ) => {
      const replies = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          holder.polar.deliver(`${(i % 2 === 0 ? one : two).url}/v1/hooks/billing`, event, { id })
        )
      )
      expect(replies.map((reply) => reply.status)).toEqual(Array.from({ length: 12 }, () => 200))
      return replies.filter((reply) => reply.body.applied === true).length
    }
    const order = {
      type: "order.paid",
      data: {
        id: "ord_replicas",
        customer: { external_id: orgId },
        metadata: { kind: "ai_credit", microCents: "500000000" }
      }
    }
    expect(await deliverBoth(order, `msg_order_${orgId}`)).toBe(1)
    const subscription = { type: "subscription.active", data: { ...holder.polar.subscribe(orgId) } }
    expect(await deliverBoth(subscription, `msg_sub_${orgId}`)).toBe(1)
    for (const api of [apiOne, apiTwo]) {
      const credit = await api.get(`/v1/orgs/${slug}/ai/credit`, { token: admin.token })
      expect(credit.body).toMatchObject({ balanceMicroCents: 500_000_000, hasPaymentMethod: true })
      const ledger = await api.get(`/v1/orgs/${slug}/ai/ledger`, { token: admin.token })
      expect(
        ledger.body.items.map((row: { kind: string; amountMicroCents: number }) => [row.kind, row.amountMicroCents])
      ).toEqual([["topup", 500_000_000]])
      expect((await api.get(`/v1/orgs/${slug}/billing`, { token: admin.token })).body).toMatchObject({
        plan: "pro",
        status: "active"
      })
    }
  })
})
