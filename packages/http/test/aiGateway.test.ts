import { AiUpstreamOpenAi } from "@hostplane/adapters-providers"
import { Ai, Jobs } from "@hostplane/core"
import { type FakeOpenAi, startFakeOpenAi } from "@hostplane/testkit"
import { Effect, Option, Redacted } from "effect"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { creditOf, orgIdOf, withPolar } from "./support/polar.ts"
import { type Suite, useSuite } from "./support/TestServer.ts"

const nodeToken = "node-token-for-ai-tests"
const gpt41 = Ai.defaultCatalog.find((entry) => entry.id === "gpt-4.1")!
const valueChat = Ai.defaultCatalog.find((entry) => entry.id === "value-chat")!
const tier = 500_000_000

/** A loopback OpenAI-compatible upstream started before the suite's server. */
const withUpstream = () => {
  const holder = {} as { fake: FakeOpenAi }
  beforeAll(async () => {
    holder.fake = await startFakeOpenAi()
  })
  afterAll(() => holder.fake?.close())
  const aiUpstream = () =>
    AiUpstreamOpenAi.layer({ url: holder.fake.url, key: Redacted.make(holder.fake.key), timeout: "5 seconds" })
  return { holder, aiUpstream }
}

/** Helpers on a suite with Polar: credit by a signed `order.paid`, pro by `subscription.active`, a granted key. */
const aiHelpers = (suite: Suite, polar: () => ReturnType<typeof withPolar>["holder"]["polar"]) => {
  const hook = () => `${suite.server.url}/v1/hooks/billing`
  const credit = async (slug: string, microCents = tier) => {
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
  }
  const pro = async (slug: string) => {
    const orgId = await orgIdOf(suite.server, slug)
    const sub = polar().subscribe(orgId)
    const reply = await polar().deliver(hook(), { type: "subscription.active", data: { ...sub } })
    expect(reply.body).toEqual({ applied: true })
  }
  /** A fresh project with AI granted; its key as the node's `ai` binding carries it. */
  const granted = async (slug: string) => {
    const project = await suite.newProject(slug)
    const grant = await suite.api.post(`/v1/orgs/${slug}/projects/${project.name}/ai`, undefined, {
      token: suite.admin.token
    })
    expect(grant.status).toBe(200)
    const state = await suite.api.get("/v1/node/state", { token: nodeToken })
    const entry = (state.body.projects as Array<any>).filter((p) => p.projectId === project.id).at(-1)
    expect(entry.bindings.ai).toEqual({ key: expect.stringMatching(/^hp_ai_/) })
    return { ...project, key: entry.bindings.ai.key as string }
  }
  const chat = (key: string | undefined, body: unknown) =>
    suite.api.post("/v1/ai/chat/completions", body, key === undefined ? {} : { token: key })
  const ledger = async (slug: string) => creditOf(suite.server, await orgIdOf(suite.server, slug))
  return { credit, pro, granted, chat, ledger }
}

const ask = (model = "gpt-4.1", extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: "Say hello." }],
  ...extra
})

const until = async (check: () => Promise<boolean>, ms = 5000) => {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error("timed out")
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

describe.each(backends)("decisions part 6 AI gateway (%s)", (_name, stores) => {
  const { holder, settings, gateway } = withPolar()
  const upstream = withUpstream()
  const suite = useSuite(stores, { ...settings, node: { token: nodeToken } }, undefined, undefined, {
    providers: [gateway, upstream.aiUpstream]
  })
  const { credit, pro, granted, chat, ledger } = aiHelpers(suite, () => holder.polar)
  const fake = () => upstream.holder.fake

  beforeEach(() => {
    const f = upstream.holder.fake
    if (f === undefined) return
    f.usage = { prompt_tokens: 12, completion_tokens: 7 }
    f.omitUsage = false
    f.chunkDelayMs = 0
    f.failStatus = undefined
    f.breakStream = false
    f.reply = "Hello from the fake upstream."
  })

  it("the node state's ai binding is { key } once granted, null after revoke; the revoked key is 401", async () => {
    const slug = await suite.newOrg()
    const project = await granted(slug)
    await credit(slug)
    expect((await chat(project.key, ask())).status).toBe(200)
    const revoke = await suite.api.delete(`/v1/orgs/${slug}/projects/${project.name}/ai`, undefined, {
      token: suite.admin.token
    })
    expect(revoke.status).toBe(204)
    const state = await suite.api.get("/v1/node/state", { token: nodeToken })
    const entry = (state.body.projects as Array<any>).filter((p) => p.projectId === project.id).at(-1)
    expect(entry.bindings.ai).toBeNull()
    const reply = await chat(project.key, ask())
    expect(reply.status).toBe(401)
    expect(reply.body.code).toBe("unauthorized")
  })

  it("no key, a malformed one or an unknown one is 401, before the body is looked at", async () => {
    for (const key of [undefined, "not-a-key", "hp_ai_unknown"]) {
      const reply = await chat(key, { nonsense: true })
      expect(reply.status).toBe(401)
      expect(reply.body.code).toBe("unauthorized")
    }
  })

  it("a body that is no chat request is 400 bad_request with issues", async () => {
    const slug = await suite.newOrg()
    const { key } = await granted(slug)
    const missing = await chat(key, { model: "gpt-4.1" })
    expect(missing.status).toBe(400)
    expect(missing.body.code).toBe("bad_request")
    expect(missing.body.details.issues).toEqual([expect.objectContaining({ path: ["messages"] })])
    const raw = await suite.api.call("POST", "/v1/ai/chat/completions", { token: key, raw: "{not json" })
    expect(raw.status).toBe(400)
    expect((await chat(key, ask("gpt-4.1", { max_tokens: -1 }))).status).toBe(400)
  })

  it("a model outside the catalog is 400 unknown_model, even at a zero balance", async () => {
    const slug = await suite.newOrg()
    const { key } = await granted(slug)
    const reply = await chat(key, ask("gpt-9000"))
    expect(reply.status).toBe(400)
    expect(reply.body).toMatchObject({ code: "unknown_model", details: { model: "gpt-9000" } })
    expect(fake().requests.some((r) => r.body.model === "gpt-9000")).toBe(false)
  })

  it("free plan token limits are 400: max_tokens above maxOutputTokens, an input above maxInputTokens", async () => {
    const slug = await suite.newOrg()
    const { key } = await granted(slug)
    await credit(slug)
    const out = await chat(key, ask("gpt-4.1", { max_tokens: 4097 }))
    expect(out.status).toBe(400)
    expect(out.body).toMatchObject({ code: "bad_request", details: { limit: "maxOutputTokens" } })
    const big = await chat(key, { model: "gpt-4.1", messages: [{ role: "user", content: "x".repeat(4 * 32768) }] })
    expect(big.status).toBe(400)
    expect(big.body).toMatchObject({ code: "bad_request", details: { limit: "maxInputTokens" } })
    expect((await chat(key, ask("gpt-4.1", { max_completion_tokens: 4096 }))).status).toBe(200)
  })

  it("the plan's maxOutputTokens goes upstream as max_tokens when the caller set none; the upstream model name", async () => {
    const slug = await suite.newOrg()
    const { key } = await granted(slug)
    await credit(slug)
    const reply = await chat(key, ask("value-chat"))
    expect(reply.status).toBe(200)
    const sent = fake().requests.at(-1)!
    expect(sent.token).toBe(fake().key)
    expect(sent.body).toMatchObject({ model: valueChat.upstreamModel, max_tokens: 4096 })
    // The answer carries the catalog's name, never the upstream's.
    expect(reply.body.model).toBe("value-chat")
  })

  it("on pro the token limits are 0, the model decides: large max_tokens and inputs pass, no max_tokens is added", async () => {
    const slug = await suite.newOrg()
    await pro(slug)
    const { key } = await granted(slug)
    await credit(slug)
    const plain = await chat(key, ask("value-chat"))
    expect(plain.status).toBe(200)
    expect(fake().requests.at(-1)!.body).not.toHaveProperty("max_tokens")
    const long = await chat(key, ask("gpt-4.1", { max_tokens: 50_000 }))
    expect(long.status).toBe(200)
    expect(fake().requests.at(-1)!.body.max_tokens).toBe(50_000)
    const big = await chat(key, { model: "gpt-4.1", messages: [{ role: "user", content: "x".repeat(4 * 32768 + 8) }] })
    expect(big.status).toBe(200)
  })

  it("past requestsPerMinute calls of a project in a minute: 429 rate_limited, not charged", async () => {
    const slug = await suite.newOrg()
    const { key } = await granted(slug)
    await credit(slug)
    const replies = await Promise.all(Array.from({ length: 22 }, () => chat(key, ask())))
    const statuses = replies.map((r) => r.status)
    expect(statuses.filter((s) => s === 200)).toHaveLength(20)
    const limited = replies.filter((r) => r.status === 429)
    expect(limited).toHaveLength(2)
    expect(limited[0]!.body).toMatchObject({ code: "rate_limited", details: { requestsPerMinute: 20 } })
    const { ledger: rows } = await ledger(slug)
    expect(rows.filter((r) => r.kind === "call")).toHaveLength(20)
  })

  it("once the org's calls of 24 hours cost dailySpendMicroCents: 402 daily_limit", async () => {
    const slug = await suite.newOrg()
    const { key } = await granted(slug)
    await credit(slug)
    fake().usage = { prompt_tokens: 1_000_000, completion_tokens: 0 }
    expect((await chat(key, ask())).status).toBe(200)
    const reply = await chat(key, ask())
    expect(reply.status).toBe(402)
    expect(reply.body).toMatchObject({
      code: "daily_limit",
      details: { dailySpendMicroCents: 100_000_000, spentMicroCents24h: gpt41.inputMicroCentsPerMTok }
    })
  })

  it("a balance at or below 0 is 402 insufficient_balance, and the upstream is not called", async () => {
    const slug = await suite.newOrg()
    const { key } = await granted(slug)
    const before = fake().requests.length
    const reply = await chat(key, ask())
    expect(reply.status).toBe(402)
    expect(reply.body.code).toBe("insufficient_balance")
    expect(fake().requests.length).toBe(before)
  })

  it("checks in the order of decisions part 12: token limits before the balance, the daily spend before the balance", async () => {
    const slug = await suite.newOrg()
    const { key } = await granted(slug)
    const before = fake().requests.length
    // At a zero balance a token limit still answers 400.
    const out = await chat(key, ask("gpt-4.1", { max_tokens: 4097 }))
    expect({ status: out.status, code: out.body.code, limit: out.body.details?.limit }).toEqual({
      status: 400,
      code: "bad_request",
      limit: "maxOutputTokens"
    })
    const big = await chat(key, { model: "gpt-4.1", messages: [{ role: "user", content: "x".repeat(4 * 32768 + 8) }] })
    expect({ status: big.status, code: big.body.code, limit: big.body.details?.limit }).toEqual({
      status: 400,
      code: "bad_request",
      limit: "maxInputTokens"
    })
    // One call spends 6 times the free plan's daily allowance and leaves the balance below 0: the next call is
    // refused for the daily spend (a limit), not for the balance.
    await credit(slug)
    fake().usage = { prompt_tokens: 3_000_000, completion_tokens: 0 }
    expect((await chat(key, ask())).status).toBe(200)
    const { credit: row } = await ledger(slug)
    expect(row.balanceMicroCents).toBe(tier - 3 * gpt41.inputMicroCentsPerMTok)
    expect(row.balanceMicroCents).toBeLessThan(0)
    const refused = await chat(key, ask())
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 402, code: "daily_limit" })
    expect(fake().requests.length).toBe(before + 1)
  })

  it("a JSON call is charged one call row at the catalog price of the upstream's usage", async () => {
    const slug = await suite.newOrg()
    const project = await granted(slug)
    await credit(slug)
    fake().usage = { prompt_tokens: 1234, completion_tokens: 567 }
    const reply = await chat(project.key, ask())
    expect(reply.status).toBe(200)
    expect(reply.body.choices[0].message.content).toBe(fake().reply)
    const cost = Math.ceil((1234 * gpt41.inputMicroCentsPerMTok + 567 * gpt41.outputMicroCentsPerMTok) / 1_000_000)
    const { credit: row, ledger: rows } = await ledger(slug)
    expect(rows[0]).toMatchObject({
      kind: "call",
      amountMicroCents: -cost,
      projectName: project.name,
      model: "gpt-4.1"
    })
    expect(row.balanceMicroCents).toBe(tier - cost)
    const page = await suite.api.get(`/v1/orgs/${slug}/ai/ledger`, { token: suite.admin.token })
    expect(page.body.items[0]).toMatchObject({ kind: "call", amountMicroCents: -cost })
    const status = await suite.api.get(`/v1/orgs/${slug}/projects/${project.name}/ai`, { token: suite.admin.token })
    expect(status.body).toMatchObject({ spentMicroCents24h: cost, balanceMicroCents: tier - cost })
  })

  it("stream: true passes server-sent events through as they arrive, asks for usage, charges from it", async () => {
    const slug = await suite.newOrg()
    const { key } = await granted(slug)
    await credit(slug)
    fake().reply = "one two three four five"
    fake().chunkDelayMs = 150
    const response = await fetch(`${suite.server.url}/v1/ai/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(ask("value-chat", { stream: true }))
    })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/event-stream")
    const reader = response.body!.getReader()
    const first = await reader.read()
    // The first bytes arrive while the upstream is still answering: streamed, not buffered.
    expect(fake().inFlight()).toBe(1)
    let text = new TextDecoder().decode(first.value)
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      text += new TextDecoder().decode(next.value)
    }
    const events = text
      .split("\n")
      .filter((line) => line.startsWith("data: "))
      .map((line) => line.slice(6))
    expect(events.at(-1)).toBe("[DONE]")
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e))
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("")).toBe("one two three four five")
    expect(chunks.every((c) => c.model === "value-chat")).toBe(true)
    // The caller did not ask for usage: the usage-only chunk is not forwarded.
    expect(chunks.some((c) => c.usage !== undefined)).toBe(false)
    expect(fake().requests.at(-1)!.body.stream_options).toEqual({ include_usage: true })
    const cost = Math.ceil((12 * valueChat.inputMicroCentsPerMTok + 7 * valueChat.outputMicroCentsPerMTok) / 1_000_000)
    await until(async () => (await ledger(slug)).ledger.some((r) => r.kind === "call"))
    expect((await ledger(slug)).ledger.filter((r) => r.kind === "call").map((r) => r.amountMicroCents)).toEqual([-cost])
  })

  it("a caller that asked for include_usage gets the usage chunk", async () => {
    const slug = await suite.newOrg()
    const { key } = await granted(slug)
    await credit(slug)
    const reply = await chat(key, ask("gpt-4.1", { stream: true, stream_options: { include_usage: true } }))
    expect(reply.status).toBe(200)
    expect(reply.body).toContain('"usage":{"prompt_tokens":12,"completion_tokens":7')
  })

  it("a caller that disconnects mid-stream is still charged, exactly once, from the final usage", async () => {
    const slug = await suite.newOrg()
    const { key } = await granted(slug)
    await credit(slug)
    fake().reply = "a b c d e f g h"
    fake().chunkDelayMs = 60
    fake().usage = { prompt_tokens: 100, completion_tokens: 8 }
    const controller = new AbortController()
    const response = await fetch(`${suite.server.url}/v1/ai/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(ask("gpt-4.1", { stream: true })),
      signal: controller.signal
    })
    const reader = response.body!.getReader()
    await reader.read()
    controller.abort()
    await reader.read().catch(() => undefined)
    expect(fake().inFlight()).toBe(1)
    await until(async () => (await ledger(slug)).ledger.some((r) => r.kind === "call"))
    await until(async () => fake().inFlight() === 0)
    await new Promise((resolve) => setTimeout(resolve, 200))
    const cost = Math.ceil((100 * gpt41.inputMicroCentsPerMTok + 8 * gpt41.outputMicroCentsPerMTok) / 1_000_000)
    const calls = (await ledger(slug)).ledger.filter((r) => r.kind === "call")
    expect(calls.map((r) => r.amountMicroCents)).toEqual([-cost])
  })

  it("a stream the upstream breaks off is charged by estimate, never free", async () => {
    const slug = await suite.newOrg()
    const { key } = await granted(slug)
    await credit(slug)
    fake().breakStream = true
    fake().chunkDelayMs = 50
    const reply = await chat(key, ask("gpt-4.1", { stream: true }))
    expect(reply.status).toBe(200)
    await until(async () => (await ledger(slug)).ledger.some((r) => r.kind === "call"))
    const [call] = (await ledger(slug)).ledger.filter((r) => r.kind === "call")
    expect(call!.amountMicroCents).toBeLessThan(0)
  })

  /** Records a pending call as the gateway does, owned by `owner` with a lease ending `leaseMs` from now. */
  const pendingCall = (
    slug: string,
    project: { id: any; name: string },
    owner: string,
    leaseMs: number,
    inputEstimate = 1000
  ) =>
    suite.server.run(
      Effect.gen(function* () {
        const orgId = yield* Effect.promise(() => orgIdOf(suite.server, slug))
        const calls = yield* Ai.AiCallStore
        const now = Date.now()
        const id = `aic_${Math.random().toString(36).slice(2)}`
        const started = yield* calls.start({
          id,
          orgId,
          projectId: project.id,
          projectName: project.name,
          model: "gpt-4.1",
          at: new Date(now).toISOString(),
          windowStart: new Date(now - 60_000).toISOString(),
          perMinute: 0,
          owner,
          leaseUntil: new Date(now + leaseMs).toISOString(),
          inputEstimate
        })
        expect(started).toBe(true)
        return id
      })
    )
  /** A runner identity whose process is gone (its registration's scope closed), or one alive until the suite ends. */
  const deadOwner = () =>
    suite.server.run(
      Effect.scoped(
        Effect.map(
          Effect.flatMap(Effect.service(Jobs.JobStore), (s) => s.register),
          (r) => r.owner
        )
      )
    )
  // The sweep itself; the periodic job that runs it (every 15 s) is due once at first, then 15 s later.
  const sweep = () => suite.server.run(Effect.flatMap(Effect.service(Ai.AiGateway), (gateway) => gateway.sweep))
  const sweepJob = () => suite.server.run(Jobs.JobRunner.runOnce([Ai.aiCallSweepHandler]))
  const balanced = async (slug: string) => {
    const { credit: row, ledger: rows } = await ledger(slug)
    expect(rows.reduce((sum, r) => sum + r.amountMicroCents, 0)).toBe(row.balanceMicroCents)
    return rows.filter((r) => r.kind === "call")
  }

  it("a settled call is never charged again", async () => {
    const slug = await suite.newOrg()
    const project = await granted(slug)
    const orgId = await orgIdOf(suite.server, slug)
    const charges = await suite.server.run(
      Effect.gen(function* () {
        const calls = yield* Ai.AiCallStore
        const at = new Date().toISOString()
        const id = `aic_${Math.random().toString(36).slice(2)}`
        const start = { orgId, projectId: project.id, projectName: project.name, model: "gpt-4.1", at }
        const lease = { owner: "gone", leaseUntil: at, inputEstimate: 1 }
        expect(yield* calls.start({ ...start, ...lease, id, windowStart: at, perMinute: 0 })).toBe(true)
        const charge = { inputTokens: 1, outputTokens: 1, costMicroCents: 1000, at }
        return yield* Effect.all([calls.charge(id, charge), calls.charge(id, charge)], { concurrency: 2 })
      })
    )
    expect(charges.filter(Option.isSome)).toHaveLength(1)
    // Its owner is no live process and its lease is over: pending, it would be an orphan. Settled, the sweep leaves
    // it alone.
    await sweep()
    const calls = await balanced(slug)
    expect(calls.map((r) => r.amountMicroCents)).toEqual([-1000])
  })

  it("a call settled by its answer is not charged again by the sweep after its process is gone", async () => {
    const slug = await suite.newOrg()
    const project = await granted(slug)
    await credit(slug)
    const owner = await deadOwner()
    const id = await pendingCall(slug, project, owner, 10 * 60_000)
    // The gateway's own settle (the upstream's usage) comes first; the process then dies before the sweep runs.
    const settled = await suite.server.run(
      Effect.flatMap(Effect.service(Ai.AiCallStore), (calls) =>
        calls.charge(id, { inputTokens: 10, outputTokens: 10, costMicroCents: 777, at: new Date().toISOString() })
      )
    )
    expect(Option.isSome(settled)).toBe(true)
    const orphans = await suite.server.run(
      Effect.flatMap(Effect.service(Ai.AiCallStore), (calls) =>
        calls.orphans(new Date(Date.now() + 60 * 60_000).toISOString(), 10_000)
      )
    )
    expect(orphans.map((o) => o.id)).not.toContain(id)
    await sweep()
    expect((await balanced(slug)).map((r) => r.amountMicroCents)).toEqual([-777])
  })

  it("a call whose gateway process died is charged once by the sweep, at its input estimate and the output streamed", async () => {
    const slug = await suite.newOrg()
    const project = await granted(slug)
    await credit(slug)
    const owner = await deadOwner()
    // Its lease is far from over: only the owner's death makes it an orphan.
    const id = await pendingCall(slug, project, owner, 10 * 60_000)
    await suite.server.run(
      Effect.flatMap(Effect.service(Ai.AiCallStore), (calls) =>
        calls.renew(id, new Date(Date.now() + 10 * 60_000).toISOString(), 400)
      )
    )
    // The periodic job kind runs the sweep.
    expect(await sweepJob()).toBe(1)
    const cost = Math.ceil((1000 * gpt41.inputMicroCentsPerMTok + 100 * gpt41.outputMicroCentsPerMTok) / 1_000_000)
    expect((await balanced(slug)).map((r) => r.amountMicroCents)).toEqual([-cost])
    // Swept once: the next sweep and a late settle of the same call charge nothing.
    await sweep()
    const late = await suite.server.run(
      Effect.flatMap(Effect.service(Ai.AiCallStore), (calls) =>
        calls.charge(id, { inputTokens: 1, outputTokens: 1, costMicroCents: 5, at: new Date().toISOString() })
      )
    )
    expect(Option.isNone(late)).toBe(true)
    expect(await balanced(slug)).toHaveLength(1)
  })

  it("the sweep leaves a live process's call alone until its lease ends (a frozen process's call is charged)", async () => {
    const slug = await suite.newOrg()
    const project = await granted(slug)
    await credit(slug)
    // A live identity: its registration stays open while the sweeps run.
    const counts = await suite.server.run(
      Effect.scoped(
        Effect.gen(function* () {
          const { owner } = yield* (yield* Jobs.JobStore).register
          yield* Effect.promise(() => pendingCall(slug, project, owner, 10 * 60_000))
          const gateway = yield* Ai.AiGateway
          yield* gateway.sweep
          const running = (yield* Effect.promise(() => balanced(slug))).length
          // Alive but its lease is over: frozen, or cut off from the database; charged.
          yield* Effect.promise(() => pendingCall(slug, project, owner, -1000))
          yield* gateway.sweep
          return { running, frozen: (yield* Effect.promise(() => balanced(slug))).length }
        })
      )
    )
    expect(counts).toEqual({ running: 0, frozen: 1 })
  })

  it("an orphan with nothing to charge (a row from before calls kept their estimate) is released: no ledger row", async () => {
    const slug = await suite.newOrg()
    const project = await granted(slug)
    await credit(slug)
    const id = await pendingCall(slug, project, await deadOwner(), 60_000, 0)
    // Sweep counts are global (other tests' orphans too): the call's own state tells.
    await sweep()
    expect(await balanced(slug)).toHaveLength(0)
    const late = await suite.server.run(
      Effect.flatMap(Effect.service(Ai.AiCallStore), (calls) =>
        calls.charge(id, { inputTokens: 1, outputTokens: 1, costMicroCents: 5, at: new Date().toISOString() })
      )
    )
    expect(Option.isNone(late)).toBe(true)
  })

  it("the sweep during a streaming call changes nothing: the call is charged once, by its usage, when it ends", async () => {
    const slug = await suite.newOrg()
    const { key } = await granted(slug)
    await credit(slug)
    fake().chunkDelayMs = 100
    const reply = chat(key, ask("gpt-4.1", { stream: true }))
    await until(async () => fake().inFlight() > 0)
    await sweep()
    expect(await balanced(slug)).toHaveLength(0)
    expect((await reply).status).toBe(200)
    await until(async () => (await balanced(slug)).length === 1)
    const cost = Math.ceil((12 * gpt41.inputMicroCentsPerMTok + 7 * gpt41.outputMicroCentsPerMTok) / 1_000_000)
    expect((await balanced(slug)).map((r) => r.amountMicroCents)).toEqual([-cost])
  })

  it("upstream refusals: its 400 is 400, its 429 is 429 rate_limited, its 500 is 502 ai_upstream_error; none charged", async () => {
    const slug = await suite.newOrg()
    const { key } = await granted(slug)
    await credit(slug)
    for (const [status, expected, code] of [
      [400, 400, "bad_request"],
      [429, 429, "rate_limited"],
      [500, 502, "ai_upstream_error"]
    ] as const) {
      fake().failStatus = status
      const reply = await chat(key, ask())
      expect(reply.status).toBe(expected)
      expect(reply.body).toMatchObject({ code, details: { upstreamStatus: status } })
    }
    expect((await ledger(slug)).ledger.filter((r) => r.kind === "call")).toHaveLength(0)
  })

  it("many calls racing on a small balance: the ledger still sums to the balance exactly", async () => {
    const slug = await suite.newOrg()
    await pro(slug)
    const { key } = await granted(slug)
    await credit(slug)
    // Each call costs a fifth of the balance: a handful pass the check before the balance drops to 0 or below.
    fake().usage = { prompt_tokens: 500_000, completion_tokens: 0 }
    fake().chunkDelayMs = 0
    const replies = await Promise.all(
      Array.from({ length: 40 }, (_, i) => chat(key, ask("gpt-4.1", i % 2 === 0 ? { stream: true } : {})))
    )
    const ok = replies.filter((r) => r.status === 200).length
    expect(ok).toBeGreaterThanOrEqual(5)
    expect(replies.filter((r) => r.status !== 200).every((r) => r.body.code === "insufficient_balance")).toBe(true)
    await until(async () => (await ledger(slug)).ledger.filter((r) => r.kind === "call").length === ok)
    const { credit: row, ledger: rows } = await ledger(slug)
    const sum = rows.reduce((total, r) => total + r.amountMicroCents, 0)
    expect(sum).toBe(row.balanceMicroCents)
    expect(row.balanceMicroCents).toBe(tier - ok * 100_000_000)
  })
})

describe.each(backends)("decisions part 6 AI gateway without upstream credentials (%s)", (_name, stores) => {
  const { holder, settings, gateway } = withPolar()
  const suite = useSuite(stores, { ...settings, node: { token: nodeToken } }, undefined, undefined, {
    providers: [gateway]
  })
  const { credit, granted, chat } = aiHelpers(suite, () => holder.polar)

  it("a granted project with credit gets 503 ai_unavailable; the checks before it still answer first", async () => {
    const slug = await suite.newOrg()
    const { key } = await granted(slug)
    expect((await chat(key, ask("nope"))).body.code).toBe("unknown_model")
    expect((await chat(key, ask())).body.code).toBe("insufficient_balance")
    await credit(slug)
    const reply = await chat(key, ask())
    expect(reply.status).toBe(503)
    expect(reply.body.code).toBe("ai_unavailable")
  })
})

describe("decisions part 7 a deployment's own AI catalog (SERVICE_AI_CATALOG's entries)", () => {
  const house: Ai.CatalogEntry = {
    id: "house-small",
    lane: "value",
    listPrice: false,
    inputMicroCentsPerMTok: 10_000_000,
    outputMicroCentsPerMTok: 30_000_000,
    contextTokens: 128_000,
    upstreamModel: "llama-3.1-8b-instruct"
  }
  const sonnet: Ai.CatalogEntry = {
    id: "claude-sonnet-4",
    lane: "frontier",
    provider: "anthropic",
    listPrice: true,
    inputMicroCentsPerMTok: 300_000_000,
    outputMicroCentsPerMTok: 1_500_000_000,
    contextTokens: 200_000,
    upstreamModel: "claude-sonnet-4"
  }
  const { holder, settings, gateway } = withPolar()
  const upstream = withUpstream()
  const suite = useSuite(
    backends[1]![1],
    { ...settings, node: { token: nodeToken }, ai: { catalog: [sonnet, house] } },
    undefined,
    undefined,
    { providers: [gateway, upstream.aiUpstream] }
  )
  const { credit, granted, chat, ledger } = aiHelpers(suite, () => holder.polar)

  it("GET /v1/ai/models answers exactly the deployment's catalog, without upstream names", async () => {
    const reply = await suite.api.get("/v1/ai/models", { token: suite.outsider.token })
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({ items: [sonnet, house].map(({ upstreamModel: _, ...entry }) => entry) })
  })

  it("a model of the built-in catalog is 400 unknown_model here; the catalog's models go upstream under their upstreamModel", async () => {
    const slug = await suite.newOrg()
    const { key } = await granted(slug)
    await credit(slug)
    const fake = upstream.holder.fake
    const before = fake.requests.length
    const builtIn = await chat(key, ask("gpt-4.1"))
    expect({ status: builtIn.status, code: builtIn.body.code }).toEqual({ status: 400, code: "unknown_model" })
    expect(fake.requests.length).toBe(before)
    fake.usage = { prompt_tokens: 1000, completion_tokens: 100 }
    const value = await chat(key, ask("house-small"))
    expect(value.status).toBe(200)
    expect(value.body.model).toBe("house-small")
    expect(fake.requests.at(-1)!.body.model).toBe("llama-3.1-8b-instruct")
    const frontier = await chat(key, ask("claude-sonnet-4"))
    expect(frontier.status).toBe(200)
    expect(fake.requests.at(-1)!.body.model).toBe("claude-sonnet-4")
    // Charged at this catalog's prices.
    const costs = [house, sonnet].map((entry) =>
      Math.ceil((1000 * entry.inputMicroCentsPerMTok + 100 * entry.outputMicroCentsPerMTok) / 1_000_000)
    )
    const calls = (await ledger(slug)).ledger.filter((r) => r.kind === "call")
    expect(calls.map((r) => [r.model, r.amountMicroCents])).toEqual([
      ["claude-sonnet-4", -costs[1]!],
      ["house-small", -costs[0]!]
    ])
  })
})
