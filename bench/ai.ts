// `npm run bench:ai -- [--calls <n>] [--runs <n>] [--timeout <s>] [--save]`
//
// The AI gateway's overhead per call: the real hostplane server (embedded PostgreSQL) in front of a loopback
// OpenAI-compatible fake, against calling the same fake directly, alternately, one call at a time, in the same run.
// Each gateway call does everything a real one does: key lookup, limits, balance, the call record, the upstream call
// and the charge. Prints p50 and p99 of both and of the difference. Runs directly on Node 22 type stripping.
import { startFakeOpenAi, startFakePolar } from "@hostplane/testkit"
import * as Http from "node:http"
import { log, makeTempDir, parseOptions, round, runBench, startHostplane } from "./support/harness.ts"
import { gitCommit, loadLine, machine, spread, writeReport } from "./support/report.ts"

const usage = `usage: npm run bench:ai -- [options]
  --calls <n>     calls per run through each path (default 200; at most 500: the pro plan allows 600 a minute)
  --runs <n>      runs, each on a fresh project (default 3)
  --timeout <s>   abort after this many seconds (default 300)
  --save          write the JSON result to bench/results/`

const { values, fail } = parseOptions(usage, {
  calls: { type: "string" },
  runs: { type: "string" },
  timeout: { type: "string" },
  save: { type: "boolean", default: false }
})
const count = (raw: string | undefined, fallback: number, max: number, name: string) => {
  const n = raw === undefined ? fallback : Number(raw)
  if (!Number.isInteger(n) || n < 1 || n > max) fail(`invalid --${name} ${JSON.stringify(raw)}`)
  return n
}
const calls = count(values.calls, 200, 500, "calls")
const runs = count(values.runs, 3, 50, "runs")
const timeoutS = count(values.timeout, 300, 3600, "timeout")

const agent = new Http.Agent({ keepAlive: true, maxSockets: 1 })

/** One POST on a kept-alive connection; answers the status, the body and the milliseconds it took. */
const post = (url: string, headers: Record<string, string>, body: string) =>
  new Promise<{ status: number; body: string; ms: number }>((resolve, reject) => {
    const started = process.hrtime.bigint()
    const req = Http.request(
      url,
      {
        method: "POST",
        agent,
        headers: { ...headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) }
      },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString("utf8"),
            ms: Number(process.hrtime.bigint() - started) / 1e6
          })
        )
      }
    )
    req.on("error", reject)
    req.end(body)
  })

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

const json = (reply: { status: number; body: string }, what: string) => {
  if (reply.status < 200 || reply.status >= 300) throw new Error(`${what} answered ${reply.status}: ${reply.body}`)
  return reply.body === "" ? undefined : JSON.parse(reply.body)
}

const main = async () => {
  const dir = await makeTempDir("hostplane-bench-ai-")
  const fake = await startFakeOpenAi()
  const polar = await startFakePolar()
  const nodeToken = "bench-node-token"
  const server = await startHostplane(dir, {
    SERVICE_AI_UPSTREAM_URL: fake.url,
    SERVICE_AI_UPSTREAM_KEY: fake.key,
    SERVICE_NODE_TOKEN: nodeToken,
    SERVICE_BILLING_WEBHOOK_SECRET: polar.webhookSecret
  })
  const session = { authorization: `Bearer ${server.token}` }
  const me = json(await post(`${server.base}/v1/orgs`, session, JSON.stringify({ name: "AI bench" })), "org create")
  const slug = me.slug as string
  const hook = `${server.base}/v1/hooks/billing`
  // Pro (600 calls a minute) and plenty of credit, through the signed webhooks as Polar sends them.
  await polar.deliver(hook, {
    type: "subscription.active",
    data: { id: "sub_bench", status: "active", metadata: { orgSlug: slug } }
  })
  await polar.deliver(hook, {
    type: "order.paid",
    data: { id: "ord_bench", metadata: { kind: "ai_credit", microCents: "1000000000000", orgSlug: slug } }
  })
  const body = JSON.stringify({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "Say hello." }] })
  const results = []
  for (let run = 1; run <= runs; run++) {
    const project = json(
      await post(`${server.base}/v1/orgs/${slug}/projects`, session, JSON.stringify({ name: `ai-${run}` })),
      "project create"
    )
    json(await post(`${server.base}/v1/orgs/${slug}/projects/${project.name}/ai`, session, ""), "AI grant")
    const state = await fetch(`${server.base}/v1/node/state`, { headers: { authorization: `Bearer ${nodeToken}` } })
    const entry = ((await state.json()) as { projects: Array<any> }).projects
      .filter((p) => p.projectId === project.id)
      .at(-1)
    const key = entry.bindings.ai.key as string
    const gateway: Array<number> = []
    const direct: Array<number> = []
    for (let i = 0; i < 20; i++)
      json(await post(`${server.base}/v1/ai/chat/completions`, { authorization: `Bearer ${key}` }, body), "warm-up")
    for (let i = 0; i < calls; i++) {
      const viaGateway = await post(`${server.base}/v1/ai/chat/completions`, { authorization: `Bearer ${key}` }, body)
      json(viaGateway, "gateway call")
      gateway.push(viaGateway.ms)
      const upstream = await post(`${fake.url}/chat/completions`, { authorization: `Bearer ${fake.key}` }, body)
      json(upstream, "direct call")
      direct.push(upstream.ms)
    }
    const g = [...gateway].sort((a, b) => a - b)
    const d = [...direct].sort((a, b) => a - b)
    const figures = {
      run,
      gatewayP50: round(percentile(g, 50), 2),
      gatewayP99: round(percentile(g, 99), 2),
      directP50: round(percentile(d, 50), 2),
      directP99: round(percentile(d, 99), 2)
    }
    results.push({
      ...figures,
      overheadP50: round(figures.gatewayP50 - figures.directP50, 2),
      overheadP99: round(figures.gatewayP99 - figures.directP99, 2)
    })
    log(
      `run ${run}: gateway p50 ${figures.gatewayP50} ms p99 ${figures.gatewayP99} ms; direct p50 ${figures.directP50} ms p99 ${figures.directP99} ms (${loadLine()})`
    )
  }
  const p50 = spread(results.map((r) => r.overheadP50))
  const p99 = spread(results.map((r) => r.overheadP99))
  console.log(`\nAI gateway overhead per call (${calls} sequential calls per run, ${runs} runs; ${loadLine()}):`)
  console.log(
    `  p50 +${p50.median} ms (min ${p50.min}, max ${p50.max}); p99 +${p99.median} ms (min ${p99.min}, max ${p99.max})`
  )
  await writeReport(
    "ai",
    { date: new Date().toISOString(), commit: gitCommit(), machine: machine(), calls, runs, results } as {
      date: string
    },
    values.save === true
  )
  agent.destroy()
  await fake.close()
  await polar.close()
}

await runBench(main, timeoutS)
