import { type FakeOpenAi, type FakePolar, startFakeOpenAi, startFakePolar } from "@hostplane/testkit"
import type { ChildProcess } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, signIn, startOnData, stopServer } from "./support/ServerProcess.ts"

const nodeToken = "node-token-for-ai-crash"

/**
 * A gateway call in flight when its server is SIGKILLed stays `pending` (the upstream was asked, its answer
 * never read to the usage). The server started again on the same data notices the dead process's identity at once
 * (its session lock is gone) and its periodic sweep charges the call once, at the estimate; the ledger still sums to
 * the balance. The sweep runs every second here (`SERVICE_AI_SWEEP_EVERY`, 15 s unless set), and its rounds are
 * counted on `/metrics`, so the test waits for rounds to have run rather than for a fixed time.
 */
describe("an AI call across a server crash", () => {
  let dataDir: string
  let base: string
  let server: ChildProcess | undefined
  let upstream: FakeOpenAi
  let polar: FakePolar
  let metricsUrl: string

  const start = async () => {
    const metricsListen = `127.0.0.1:${await freePort()}`
    ;({ base, child: server } = await startOnData(
      dataDir,
      {
        SERVICE_NODE_TOKEN: nodeToken,
        SERVICE_AI_UPSTREAM_URL: upstream.url,
        SERVICE_AI_UPSTREAM_KEY: upstream.key,
        SERVICE_BILLING_WEBHOOK_SECRET: polar.webhookSecret,
        SERVICE_AI_SWEEP_EVERY: "1 second",
        SERVICE_METRICS_LISTEN: metricsListen
      },
      // A restart first stops the killed server's orphaned PostgreSQL: slow on a loaded machine.
      1_200
    ))
    metricsUrl = `http://${metricsListen}/metrics`
  }

  /** Sweep rounds this server process ran to their end. */
  const sweeps = async () => {
    const body = await (await fetch(metricsUrl)).text()
    const line = body
      .split("\n")
      .find((text) => text.startsWith('hostplane_jobs_total{kind="ai_call_sweep",outcome="done"} '))
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1))
  }

  const stop = (signal: NodeJS.Signals) => stopServer(server, signal)

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-ai-crash-"))
    upstream = await startFakeOpenAi()
    polar = await startFakePolar()
    await start()
  }, 360_000)
  afterAll(async () => {
    await stop("SIGTERM")
    await upstream?.close()
    await polar?.close()
    rmSync(dataDir, { recursive: true, force: true })
  }, 60_000)

  it("SIGKILL mid-stream, restart: the pending call is charged once by the sweep and the ledger sums to the balance", async () => {
    const { call } = await signIn(() => base, "ai-crasher")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    const paid = await polar.deliver(`${base}/v1/hooks/billing`, {
      type: "order.paid",
      data: { id: "ord_crash", metadata: { kind: "ai_credit", microCents: "500000000", orgSlug: slug } }
    })
    expect(paid.body).toEqual({ applied: true })
    expect((await call("POST", `/v1/orgs/${slug}/projects`, { name: "crashai" })).status).toBe(201)
    expect((await call("POST", `/v1/orgs/${slug}/projects/crashai/ai`)).status).toBe(200)
    const state = await fetch(`${base}/v1/node/state`, { headers: { authorization: `Bearer ${nodeToken}` } })
    const key = ((await state.json()) as { projects: Array<any> }).projects
      .filter((p) => p.bindings.ai !== null && p.bindings.ai !== undefined)
      .at(-1).bindings.ai.key as string

    // A slow stream: one word a second, so the server dies with the call pending.
    upstream.chunkDelayMs = 1_000
    upstream.reply = Array.from({ length: 30 }, (_, i) => `word${i}`).join(" ")
    const content = "Tell me a long story about a crash. ".repeat(20)
    const reply = await fetch(`${base}/v1/ai/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4.1", stream: true, messages: [{ role: "user", content }] })
    })
    expect(reply.status).toBe(200)
    const reader = reply.body!.getReader()
    // The first event has arrived: the upstream was asked and the call is pending.
    const first = await reader.read()
    expect(first.done).toBe(false)
    await stop("SIGKILL")
    await reader.cancel().catch(() => undefined)
    expect(upstream.requests).toHaveLength(1)

    await start()
    const ledger = async () => (await call("GET", `/v1/orgs/${slug}/ai/ledger?limit=100`)).body.items as Array<any>
    // The sweep runs every round once a runner sees the killed process's identity gone.
    await expect
      .poll(async () => (await ledger()).filter((row) => row.kind === "call").length, {
        timeout: 120_000,
        interval: 500
      })
      .toBe(1)
    // Exactly once: the rounds that follow (two at least, seen ended on /metrics) find nothing more to charge.
    const seen = await sweeps()
    await expect.poll(sweeps, { timeout: 120_000, interval: 250 }).toBeGreaterThanOrEqual(seen + 2)
    const rows = await ledger()
    expect(rows.filter((row) => row.kind === "call")).toHaveLength(1)
    const [charged] = rows.filter((row) => row.kind === "call")
    expect(charged).toMatchObject({ projectName: "crashai", model: "gpt-4.1" })
    expect(charged.amountMicroCents).toBeLessThan(0)
    const credit = (await call("GET", `/v1/orgs/${slug}/ai/credit`)).body
    expect(rows.reduce((sum, row) => sum + row.amountMicroCents, 0)).toBe(credit.balanceMicroCents)
    expect(credit.balanceMicroCents).toBe(500_000_000 + charged.amountMicroCents)
  }, 600_000)
})
