import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { creditOf, creditProduct, orgIdOf, publicUrl, returnTo, withPolar } from "./support/polar.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { auditOf, useSuite } from "./support/TestServer.ts"

const tiers = [500_000_000, 1_000_000_000, 2_500_000_000, 10_000_000_000]

describe.each(backends)("spec 4.10 AI catalog and credit (%s)", (_name, stores) => {
  const { holder, settings, gateway } = withPolar()
  const suite = useSuite(stores, settings, undefined, undefined, { providers: [gateway] })
  const { api, newOrg } = suite
  const polar = () => holder.polar
  const hook = () => `${suite.server.url}/v1/hooks/billing`

  /** A paid credit order for `slug`: the balance rises and a payment method is stored. */
  const paid = async (slug: string, microCents = 500_000_000) => {
    const orgId = await orgIdOf(suite.server, slug)
    const reply = await polar().deliver(hook(), {
      type: "order.paid",
      data: {
        id: "ord",
        customer: { external_id: orgId },
        metadata: { kind: "ai_credit", microCents: `${microCents}` }
      }
    })
    expect(reply.body).toEqual({ applied: true })
    return slug
  }

  describe("GET /v1/ai/models", () => {
    it("needs a login (401); answers the catalog: frontier entries list-priced with a provider, value ones without", async () => {
      expect((await api.get("/v1/ai/models")).status).toBe(401)
      const reply = await api.get("/v1/ai/models", { token: suite.outsider.token })
      expect(reply.status).toBe(200)
      const items = reply.body.items as ReadonlyArray<Record<string, unknown>>
      expect(items.length).toBeGreaterThan(0)
      for (const entry of items) {
        expect(Object.keys(entry)).not.toContain("upstreamModel")
        expect(Number.isInteger(entry.inputMicroCentsPerMTok)).toBe(true)
        expect(Number.isInteger(entry.outputMicroCentsPerMTok)).toBe(true)
        if (entry.lane === "frontier") expect(entry).toMatchObject({ listPrice: true, provider: expect.any(String) })
        else expect(entry).not.toHaveProperty("provider")
      }
      expect(items.map((entry) => entry.lane)).toEqual(expect.arrayContaining(["frontier", "value"]))
    })
  })

  describe("credit and ledger", () => {
    itChecksRoles(suite, {
      name: "GET ai/credit",
      min: "member",
      request: (slug) => ({ method: "GET", path: `/v1/orgs/${slug}/ai/credit` }),
      ok: 200
    })
    itChecksRoles(suite, {
      name: "GET ai/ledger",
      min: "member",
      request: (slug) => ({ method: "GET", path: `/v1/orgs/${slug}/ai/ledger` }),
      ok: 200
    })

    it("a new org has balance 0, no payment method, auto top-up off, 0 of 3 today", async () => {
      const slug = await newOrg()
      const reply = await api.get(`/v1/orgs/${slug}/ai/credit`, { token: suite.admin.token })
      expect(reply.body).toEqual({
        balanceMicroCents: 0,
        hasPaymentMethod: false,
        autoTopup: { enabled: false, amountMicroCents: null, thresholdMicroCents: null },
        autoTopupsToday: 0,
        autoTopupPerDay: 3
      })
      expect((await api.get(`/v1/orgs/${slug}/ai/ledger`, { token: suite.admin.token })).body).toEqual({
        items: [],
        nextCursor: null
      })
    })

    it("order.paid shows in credit and as a topup ledger row; pages by ledger_id, before exclusive", async () => {
      const slug = await newOrg()
      for (const amount of tiers) await paid(slug, amount)
      const credit = await api.get(`/v1/orgs/${slug}/ai/credit`, { token: suite.admin.token })
      expect(credit.body).toMatchObject({ balanceMicroCents: 14_000_000_000, hasPaymentMethod: true })
      const first = await api.get(`/v1/orgs/${slug}/ai/ledger?limit=3`, { token: suite.admin.token })
      expect(first.body.items.map((row: { amountMicroCents: number }) => row.amountMicroCents)).toEqual(
        [...tiers].reverse().slice(0, 3)
      )
      expect(Object.keys(first.body.items[0]).sort()).toEqual(
        ["amountMicroCents", "createdAt", "kind", "ledger_id", "model", "projectName"].sort()
      )
      expect(first.body.items[0]).toMatchObject({ kind: "topup", projectName: null, model: null })
      expect(first.body.nextCursor).toBe(first.body.items[2].ledger_id)
      const rest = await api.get(`/v1/orgs/${slug}/ai/ledger?limit=3&before=${first.body.nextCursor}`, {
        token: suite.admin.token
      })
      expect(rest.body).toEqual({
        items: [expect.objectContaining({ amountMicroCents: tiers[0], kind: "topup" })],
        nextCursor: null
      })
      for (const bad of ["limit=0", "limit=201", "limit=x", "before=0", "before=abc"]) {
        const reply = await api.get(`/v1/orgs/${slug}/ai/ledger?${bad}`, { token: suite.admin.token })
        expect({ bad, status: reply.status }).toEqual({ bad, status: 400 })
      }
    })
  })

  describe("ledger pages", () => {
    it("without limit a page is 50 rows, newest first (ledger_id descending); limit=200 answers them all", async () => {
      const slug = await newOrg()
      const orgId = await orgIdOf(suite.server, slug)
      // 55 topups, 5 at a time: each a signed order.paid of its own.
      for (let batch = 0; batch < 11; batch++) {
        await Promise.all(
          Array.from({ length: 5 }, (_, i) =>
            polar().deliver(hook(), {
              type: "order.paid",
              data: {
                id: `ord_page_${batch}_${i}`,
                customer: { external_id: orgId },
                metadata: { kind: "ai_credit", microCents: `${500_000_000 + batch * 5 + i}` }
              }
            })
          )
        )
      }
      const first = await api.get(`/v1/orgs/${slug}/ai/ledger`, { token: suite.admin.token })
      expect(first.status).toBe(200)
      const ids = (first.body.items as Array<{ ledger_id: number }>).map((row) => row.ledger_id)
      expect(ids).toHaveLength(50)
      expect([...ids].sort((a, b) => b - a)).toEqual(ids)
      expect(first.body.nextCursor).toBe(ids[49])
      const rest = await api.get(`/v1/orgs/${slug}/ai/ledger?before=${first.body.nextCursor}`, {
        token: suite.admin.token
      })
      expect(rest.body.items).toHaveLength(5)
      expect(rest.body.nextCursor).toBeNull()
      const all = await api.get(`/v1/orgs/${slug}/ai/ledger?limit=200`, { token: suite.admin.token })
      expect(all.body.items).toHaveLength(55)
      expect(all.body.nextCursor).toBeNull()
      const credit = await api.get(`/v1/orgs/${slug}/ai/credit`, { token: suite.admin.token })
      const sum = (all.body.items as Array<{ amountMicroCents: number }>).reduce((t, r) => t + r.amountMicroCents, 0)
      expect(credit.body.balanceMicroCents).toBe(sum)
    })
  })

  describe("credit checkout", () => {
    itChecksRoles(suite, {
      name: "POST ai/credit/checkout",
      min: "admin",
      request: (slug) => ({
        method: "POST",
        path: `/v1/orgs/${slug}/ai/credit/checkout`,
        body: { microCents: tiers[0], returnTo }
      }),
      ok: 200
    })

    it("sends Polar the credit product, amount in cents and metadata { kind, microCents, orgSlug }; answers its url", async () => {
      const slug = await newOrg()
      const orgId = await orgIdOf(suite.server, slug)
      const reply = await api.post(
        `/v1/orgs/${slug}/ai/credit/checkout`,
        { microCents: 2_500_000_000, returnTo },
        { token: suite.admin.token }
      )
      expect(reply.status).toBe(200)
      expect(reply.body.url).toMatch(/\/checkout\/chk_/)
      expect(polar().requests.findLast((request) => request.path === "/v1/checkouts/")?.body).toEqual({
        products: [creditProduct],
        success_url: returnTo,
        external_customer_id: orgId,
        amount: 2500,
        metadata: { kind: "ai_credit", microCents: "2500000000", orgSlug: slug }
      })
      // The balance rises only with order.paid.
      expect((await creditOf(suite.server, orgId)).credit.balanceMicroCents).toBe(0)
    })

    it("an amount outside the tiers or a returnTo outside the public URL is 400", async () => {
      const slug = await newOrg()
      for (const body of [
        { microCents: 123, returnTo },
        { microCents: 500_000_001, returnTo },
        { microCents: "500000000", returnTo },
        { microCents: tiers[0], returnTo: "https://evil.example/" },
        { microCents: tiers[0] }
      ]) {
        const reply = await api.post(`/v1/orgs/${slug}/ai/credit/checkout`, body, { token: suite.admin.token })
        expect({ body, status: reply.status, code: reply.body.code }).toEqual({
          body,
          status: 400,
          code: "bad_request"
        })
      }
    })

    it("Polar down is 502 billing_unavailable", async () => {
      const slug = await newOrg()
      polar().outage = 502
      const reply = await api.post(
        `/v1/orgs/${slug}/ai/credit/checkout`,
        { microCents: tiers[0], returnTo },
        { token: suite.admin.token }
      )
      polar().outage = undefined
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 502, code: "billing_unavailable" })
    })
  })

  describe("auto top-up", () => {
    const on = { enabled: true, amountMicroCents: 1_000_000_000, thresholdMicroCents: 100_000_000 }

    itChecksRoles(suite, {
      name: "PUT ai/autotopup",
      min: "admin",
      setup: (slug) => paid(slug),
      request: (slug) => ({ method: "PUT", path: `/v1/orgs/${slug}/ai/autotopup`, body: on }),
      ok: 200
    })

    it("without a stored payment method enabling is 409 no_payment_method", async () => {
      const slug = await newOrg()
      const reply = await api.put(`/v1/orgs/${slug}/ai/autotopup`, on, { token: suite.admin.token })
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 409, code: "no_payment_method" })
    })

    it("on answers 200 AICredit and audits ai.autotopup.on; off answers 204 and audits ai.autotopup.off", async () => {
      const slug = await paid(await newOrg())
      const enabled = await api.put(`/v1/orgs/${slug}/ai/autotopup`, on, { token: suite.admin.token })
      expect(enabled.status).toBe(200)
      expect(enabled.body).toMatchObject({
        balanceMicroCents: 500_000_000,
        hasPaymentMethod: true,
        autoTopup: { enabled: true, amountMicroCents: 1_000_000_000, thresholdMicroCents: 100_000_000 },
        autoTopupsToday: 0,
        autoTopupPerDay: 3
      })
      const read = await api.get(`/v1/orgs/${slug}/ai/credit`, { token: suite.admin.token })
      expect(read.body.autoTopup).toEqual(on)
      const disabled = await api.put(`/v1/orgs/${slug}/ai/autotopup`, { enabled: false }, { token: suite.admin.token })
      expect(disabled.status).toBe(204)
      expect((await api.get(`/v1/orgs/${slug}/ai/credit`, { token: suite.admin.token })).body.autoTopup.enabled).toBe(
        false
      )
      const audit = (await auditOf(suite.server, slug)).filter((event) => event.action.startsWith("ai."))
      expect(audit.map((event) => [event.action, event.actorId, event.target, event.data])).toEqual([
        [
          "ai.autotopup.on",
          suite.admin.userId,
          slug,
          { amountMicroCents: 1_000_000_000, thresholdMicroCents: 100_000_000 }
        ],
        ["ai.autotopup.off", suite.admin.userId, slug, {}]
      ])
    })

    it("enabling needs an amount in the tiers and 0 < threshold < amount: else 400 (before the payment method)", async () => {
      const slug = await newOrg()
      for (const body of [
        { enabled: true },
        { enabled: true, amountMicroCents: 7, thresholdMicroCents: 1 },
        { enabled: true, amountMicroCents: tiers[0], thresholdMicroCents: 0 },
        { enabled: true, amountMicroCents: tiers[0], thresholdMicroCents: -5 },
        { enabled: true, amountMicroCents: tiers[0], thresholdMicroCents: tiers[0] },
        { enabled: true, amountMicroCents: tiers[0], thresholdMicroCents: tiers[1] },
        { enabled: true, amountMicroCents: tiers[0], thresholdMicroCents: 1.5 },
        { amountMicroCents: tiers[0] }
      ]) {
        const reply = await api.put(`/v1/orgs/${slug}/ai/autotopup`, body, { token: suite.admin.token })
        expect({ body, status: reply.status, code: reply.body.code }).toEqual({
          body,
          status: 400,
          code: "bad_request"
        })
      }
    })
  })
})

describe("spec 4.10 AI credit with billing off", () => {
  const suite = useSuite(backends[1]![1], { settings: { publicUrl } })

  it("credit checkout is 501 billing_off; a wrong tier is still 400 first; auto top-up is 409 no_payment_method", async () => {
    const slug = await suite.newOrg()
    const token = suite.admin.token
    const off = await suite.api.post(
      `/v1/orgs/${slug}/ai/credit/checkout`,
      { microCents: tiers[0], returnTo },
      { token }
    )
    expect({ status: off.status, code: off.body.code }).toEqual({ status: 501, code: "billing_off" })
    const wrong = await suite.api.post(`/v1/orgs/${slug}/ai/credit/checkout`, { microCents: 1, returnTo }, { token })
    expect(wrong.status).toBe(400)
    const topup = await suite.api.put(
      `/v1/orgs/${slug}/ai/autotopup`,
      { enabled: true, amountMicroCents: tiers[0], thresholdMicroCents: 1 },
      { token }
    )
    expect({ status: topup.status, code: topup.body.code }).toEqual({ status: 409, code: "no_payment_method" })
  })
})
