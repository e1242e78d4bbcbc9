import { AiUpstreamOpenAi } from "@hostplane/adapters-providers"
import { Ai, Jobs, type Kernel } from "@hostplane/core"
import { PaymentGatewayMemory, startFakeOpenAi, type FakeOpenAi } from "@hostplane/testkit"
import { Clock, Effect, Option, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { creditOf, orgIdOf, topupProduct, withPolar } from "./support/polar.ts"
import { useSuite } from "./support/TestServer.ts"

const nodeToken = "node-token-for-autotopup"

describe.each(backends)("spec 4.10 AI auto top-up job (%s)", (_name, stores) => {
  // Webhooks signed as Polar signs them; the charge goes to an in-process gateway that records it.
  const { holder, settings } = withPolar()
  const payments = PaymentGatewayMemory.emptyState()
  const upstream = {} as { fake: FakeOpenAi }
  beforeAll(async () => {
    upstream.fake = await startFakeOpenAi()
  })
  afterAll(() => upstream.fake?.close())
  const suite = useSuite(stores, { ...settings, node: { token: nodeToken } }, undefined, undefined, {
    providers: [
      () => PaymentGatewayMemory.layer(payments),
      () =>
        AiUpstreamOpenAi.layer({ url: upstream.fake.url, key: Redacted.make(upstream.fake.key), timeout: "5 seconds" })
    ]
  })
  const { api } = suite
  const hook = () => `${suite.server.url}/v1/hooks/billing`
  const runTopups = () => suite.server.run(Jobs.JobRunner.runOnce([Ai.autoTopupHandler]))

  it("a call leaving the balance below the threshold starts one top-up that charges the stored method; order.paid raises the balance", async () => {
    const slug = await suite.newOrg()
    const orgId = await orgIdOf(suite.server, slug)
    payments.customers.add(orgId)
    const paid = (microCents: string, extra: Record<string, string> = {}) =>
      holder.polar.deliver(hook(), {
        type: "order.paid",
        data: { id: "ord", customer: { external_id: orgId }, metadata: { kind: "ai_credit", microCents, ...extra } }
      })
    expect((await paid("500000000")).body).toEqual({ applied: true })
    const on = await api.put(
      `/v1/orgs/${slug}/ai/autotopup`,
      { enabled: true, amountMicroCents: 1_000_000_000, thresholdMicroCents: 450_000_000 },
      { token: suite.admin.token }
    )
    expect(on.status).toBe(200)
    const project = await suite.newProject(slug)
    await api.post(`/v1/orgs/${slug}/projects/${project.name}/ai`, undefined, { token: suite.admin.token })
    const state = await api.get("/v1/node/state", { token: nodeToken })
    const key = (state.body.projects as Array<any>).filter((p) => p.projectId === project.id).at(-1).bindings.ai.key
    // 300,000 input tokens of gpt-4.1: 60,000,000 micro-cents, leaving 440,000,000 (below 450,000,000).
    upstream.fake.usage = { prompt_tokens: 300_000, completion_tokens: 0 }
    const calls = await Promise.all(
      [0, 1].map(() =>
        api.post(
          "/v1/ai/chat/completions",
          { model: "gpt-4.1", messages: [{ role: "user", content: "hi" }] },
          {
            token: key
          }
        )
      )
    )
    expect(calls.map((c) => c.status)).toEqual([200, 200])
    await runTopups()
    const charges = [...payments.charges.values()].filter((c) => c.customer === orgId)
    // Two calls below the threshold, one top-up (one unfinished top-up per org).
    expect(charges).toHaveLength(1)
    expect(charges[0]).toMatchObject({
      amountCents: 1000,
      metadata: { kind: "ai_credit", microCents: "1000000000", orgSlug: slug }
    })
    const credit = await api.get(`/v1/orgs/${slug}/ai/credit`, { token: suite.admin.token })
    expect(credit.body).toMatchObject({ balanceMicroCents: 380_000_000, autoTopupsToday: 1 })
    // The balance rises only with the order's webhook, carrying the metadata the charge put on the order.
    expect((await paid("1000000000", { topupId: charges[0]!.reference })).body).toEqual({ applied: true })
    const { credit: row } = await creditOf(suite.server, orgId)
    expect(row.balanceMicroCents).toBe(1_380_000_000)
  })
})

describe.each(backends)("spec 4.10 AI auto top-up through Polar's off-session charge (%s)", (_name, stores) => {
  // The Polar adapter over loopback HTTP against the fake: draft order, finalize, then the signed order.paid.
  const { holder, settings, gateway } = withPolar()
  const suite = useSuite(stores, settings, undefined, undefined, { providers: [gateway] })
  const { api } = suite
  const hook = () => `${suite.server.url}/v1/hooks/billing`
  const amount = 1_000_000_000
  const day = 24 * 60 * 60 * 1000

  /** The org's clock moved by `shiftMs` (the next day), for the daily cap. */
  const shifted =
    (shiftMs: number) =>
    <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      shiftMs === 0
        ? effect
        : Effect.flatMap(Effect.clockWith(Effect.succeed), (clock) =>
            Effect.provideService(effect, Clock.Clock, {
              currentTimeMillisUnsafe: () => clock.currentTimeMillisUnsafe() + shiftMs,
              currentTimeMillis: Effect.sync(() => clock.currentTimeMillisUnsafe() + shiftMs),
              currentTimeNanosUnsafe: () => clock.currentTimeNanosUnsafe() + BigInt(shiftMs) * 1_000_000n,
              currentTimeNanos: Effect.sync(() => clock.currentTimeNanosUnsafe() + BigInt(shiftMs) * 1_000_000n),
              monotonicTimeNanosUnsafe: () => clock.monotonicTimeNanosUnsafe(),
              monotonicTimeNanos: clock.monotonicTimeNanos,
              sleep: (duration) => clock.sleep(duration)
            })
          )

  /** Starts a top-up as a call below the threshold does (one unfinished per org). */
  const startTopup = (orgId: Kernel.OrgId, shiftMs = 0) =>
    suite.server.run(
      Effect.flatMap(Effect.service(Jobs.Jobs), (jobs) =>
        jobs.enqueue(Ai.autoTopup, { orgId, amountMicroCents: amount }, { key: orgId })
      ).pipe(shifted(shiftMs))
    )

  /** Drives the org's unfinished top-up now, due or not; answers its row afterwards. */
  const drive = (orgId: Kernel.OrgId, shiftMs = 0) =>
    suite.server.run(
      Effect.gen(function* () {
        const jobs = yield* Jobs.Jobs
        const row = yield* jobs.findUnfinished(Ai.autoTopup, orgId)
        if (Option.isNone(row)) return yield* Effect.die(new Error("no unfinished auto top-up"))
        return Option.getOrThrow(yield* jobs.runNow(yield* Ai.autoTopupHandler, row.value.id))
      }).pipe(shifted(shiftMs))
    )

  /** An org with auto top-up on and a saved card at Polar (its first credit order paid), at 500,000,000. */
  const setupOrg = async () => {
    const slug = await suite.newOrg()
    const orgId = await orgIdOf(suite.server, slug)
    const polar = holder.polar
    polar.customers.add(orgId)
    polar.paymentMethods.add(orgId)
    const first = await polar.deliver(hook(), {
      type: "order.paid",
      data: {
        id: "ord_first",
        customer: { external_id: orgId },
        metadata: { kind: "ai_credit", microCents: "500000000" }
      }
    })
    expect(first.body).toEqual({ applied: true })
    const on = await api.put(
      `/v1/orgs/${slug}/ai/autotopup`,
      { enabled: true, amountMicroCents: amount, thresholdMicroCents: 450_000_000 },
      { token: suite.admin.token }
    )
    expect(on.status).toBe(200)
    return { slug, orgId }
  }

  const ordersOf = (orgId: string) => [...holder.polar.orders.values()].filter((o) => o.customer.external_id === orgId)

  it("the balance rises only with order.paid: the job charges Polar, then waits in settle until the webhook, then ends done", async () => {
    const { orgId } = await setupOrg()
    holder.polar.webhookUrl = undefined
    await startTopup(orgId)
    const waiting = await drive(orgId)
    // Charged at Polar (a paid order of the top-up product with the top-up's metadata), not yet credited here.
    const [order] = ordersOf(orgId)
    expect(order).toMatchObject({
      status: "paid",
      amount: 1000,
      product_id: topupProduct,
      metadata: { kind: "ai_credit", microCents: String(amount), topupId: waiting.id }
    })
    expect(waiting).toMatchObject({
      terminalCode: null,
      phase: "settle",
      lastError: expect.stringContaining("order.paid")
    })
    expect((await creditOf(suite.server, orgId)).credit.balanceMicroCents).toBe(500_000_000)
    // Driving it again before the webhook changes nothing and charges nothing more.
    expect(await drive(orgId)).toMatchObject({ terminalCode: null, phase: "settle" })
    expect(ordersOf(orgId)).toHaveLength(1)
    expect((await creditOf(suite.server, orgId)).credit.balanceMicroCents).toBe(500_000_000)
    // Polar's order.paid (the order as Polar sends it) raises the balance once; then settle finishes.
    expect((await holder.polar.deliver(hook(), { type: "order.paid", data: { ...order! } })).body).toEqual({
      applied: true
    })
    const { credit, ledger } = await creditOf(suite.server, orgId)
    expect(credit.balanceMicroCents).toBe(1_500_000_000)
    expect(ledger.filter((row) => row.kind === "topup").map((row) => row.amountMicroCents)).toEqual([
      amount,
      500_000_000
    ])
    expect(await drive(orgId)).toMatchObject({ terminalCode: "done", phase: "settle" })
  })

  it(`at most autoTopupPerDay (${Ai.autoTopupPerDay}) top-ups a day: the next one charges nothing; the next day charges again`, async () => {
    const { slug, orgId } = await setupOrg()
    holder.polar.webhookUrl = hook()
    for (let n = 1; n <= Ai.autoTopupPerDay; n++) {
      await startTopup(orgId)
      const row = await drive(orgId)
      await holder.polar.settled()
      // The webhook may land after the settle phase looked: one more drive then finds it.
      const done = row.terminalCode === "done" ? row : await drive(orgId)
      expect(done.terminalCode).toBe("done")
      expect(ordersOf(orgId).filter((o) => o.status === "paid")).toHaveLength(n)
    }
    const credit = await api.get(`/v1/orgs/${slug}/ai/credit`, { token: suite.admin.token })
    expect(credit.body).toMatchObject({
      balanceMicroCents: 500_000_000 + Ai.autoTopupPerDay * amount,
      autoTopupsToday: Ai.autoTopupPerDay,
      autoTopupPerDay: 3
    })
    // The fourth of the day ends at its claim: no order at Polar, no change to the balance or the count.
    await startTopup(orgId)
    const fourth = await drive(orgId)
    expect(fourth).toMatchObject({ terminalCode: "done", phase: "claim" })
    expect(ordersOf(orgId)).toHaveLength(Ai.autoTopupPerDay)
    const after = await api.get(`/v1/orgs/${slug}/ai/credit`, { token: suite.admin.token })
    expect(after.body).toMatchObject({
      balanceMicroCents: 500_000_000 + Ai.autoTopupPerDay * amount,
      autoTopupsToday: Ai.autoTopupPerDay
    })
    // The next day (UTC) counts from zero again.
    await startTopup(orgId, day)
    const tomorrow = await drive(orgId, day)
    await holder.polar.settled()
    expect(tomorrow).toMatchObject({ phase: "settle" })
    expect(ordersOf(orgId)).toHaveLength(Ai.autoTopupPerDay + 1)
    const { ledger } = await creditOf(suite.server, orgId)
    expect(ledger.filter((row) => row.kind === "topup")).toHaveLength(Ai.autoTopupPerDay + 2)
  })

  it("an order.paid that never comes: settle gives up after its attempts (about 10 minutes), the job ends failed, nothing credited, and a later top-up may start", async () => {
    const { orgId } = await setupOrg()
    holder.polar.webhookUrl = undefined
    await startTopup(orgId)
    let row = await drive(orgId)
    expect(row).toMatchObject({ phase: "settle", terminalCode: null })
    // Each drive is one claim; the job's limit covers the 5 charge retries and settle's 15-second polls for 10 minutes.
    while (row.terminalCode === null) row = await drive(orgId)
    expect(row).toMatchObject({ phase: "settle", terminalCode: "failed", attempts: Ai.autoTopup.maxAttempts })
    expect(Ai.autoTopup.maxAttempts).toBe(5 + 40)
    expect(ordersOf(orgId)).toHaveLength(1)
    expect((await creditOf(suite.server, orgId)).credit.balanceMicroCents).toBe(500_000_000)
    // One unfinished top-up per org: with this one over, the next one starts (and charges a new order).
    await startTopup(orgId)
    expect(await drive(orgId)).toMatchObject({ phase: "settle", terminalCode: null })
    expect(ordersOf(orgId)).toHaveLength(2)
  })

  it("a declined card ends the top-up failed with nothing credited; the draft stays at Polar uncharged", async () => {
    const { orgId } = await setupOrg()
    holder.polar.webhookUrl = hook()
    holder.polar.declines.add(orgId)
    await startTopup(orgId)
    const row = await drive(orgId)
    expect(row).toMatchObject({
      terminalCode: "failed",
      phase: "charge",
      lastError: expect.stringContaining("declined")
    })
    expect(ordersOf(orgId).map((o) => o.status)).toEqual(["draft"])
    expect((await creditOf(suite.server, orgId)).credit.balanceMicroCents).toBe(500_000_000)
  })
})
