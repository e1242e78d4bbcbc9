import { AiUpstreamOpenAi } from "@hostplane/adapters-providers"
import { Ai, Jobs } from "@hostplane/core"
import { PaymentGatewayMemory, startFakeOpenAi, type FakeOpenAi } from "@hostplane/testkit"
import { Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { creditOf, orgIdOf, withPolar } from "./support/polar.ts"
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
    gateway: () => PaymentGatewayMemory.layer(payments),
    aiUpstream: () =>
      AiUpstreamOpenAi.layer({ url: upstream.fake.url, key: Redacted.make(upstream.fake.key), timeout: "5 seconds" })
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
