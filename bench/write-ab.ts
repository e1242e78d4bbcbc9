// Server CPU per `PUT` secret of this tree against a baseline checkout: both servers run side by side, each with its
// own embedded PostgreSQL, and are loaded one after the other (the order swapped every run). On a shared machine CPU
// per request drifts by tens of percent within minutes, so a change is judged by these paired ratios, not by two
// `bench:write` runs taken apart.
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { log, makeTempDir, parseOptions, request, round, runBench, startHostplane } from "./support/harness.ts"
import { loadOptions, loadOptionsConfig, measure, stopLoad } from "./support/load.ts"
import { formatRatio, loadLine, spread } from "./support/report.ts"

const usage = `usage: npm run bench:write-ab -- --baseline <checkout> [options]
  --baseline <dir>    another checkout of hostplane with its node_modules (git worktree add, cp -a node_modules)
  --duration <s>      measured load per server and run, seconds (default 10)
  --connections <n>   concurrent keep-alive connections (default 50)
  --warmup <s>        unmeasured load of each server once before the first run, seconds (default 20)
  --runs <n>          paired runs (default 4)
  --timeout <s>       abort everything after this many seconds`

const { values: parsed, fail } = parseOptions(usage, { ...loadOptionsConfig, baseline: { type: "string" } })
const { durationS, connections, timeoutS } = loadOptions(
  { ...parsed, warmup: parsed.warmup ?? "20", runs: parsed.runs ?? "4" },
  fail
)
const warmupS = Number(parsed.warmup ?? "20")
const runs = Number(parsed.runs ?? "4")
const baselineEntry = Path.resolve(
  parsed.baseline ?? fail("--baseline is required"),
  "packages/server/src/bin/server.ts"
)
if (!Fs.existsSync(baselineEntry)) fail(`no server at ${baselineEntry}`)

const secretPath = "/v1/orgs/bench-writes/projects/site/secrets/BENCH_SECRET"
const body = JSON.stringify({ value: "sk_live_".padEnd(64, "x") })

const main = async () => {
  const tempDir = await makeTempDir("hostplane-bench-write-ab-")
  const start = async (name: string, entry?: string) => {
    const dir = Path.join(tempDir, name)
    await Fs.promises.mkdir(dir, { mode: 0o755 })
    const hostplane = await startHostplane(dir, {}, entry)
    const headers = { authorization: `Bearer ${hostplane.token}`, "content-type": "application/json" }
    const org = JSON.stringify({ name: "Bench writes", slug: "bench-writes" })
    for (const [path, payload] of [
      ["/v1/orgs", org],
      ["/v1/orgs/bench-writes/projects", JSON.stringify({ name: "site" })]
    ]) {
      const reply = await request("POST", `${hostplane.base}${path}`, headers, payload, 10_000)
      if (reply.status !== 201) throw new Error(`${name}: POST ${path} answered ${reply.status}`)
    }
    const { child, base } = hostplane
    return { name, url: `${base}${secretPath}`, child, withChildren: true, database: child.pid, headers }
  }
  const targets = [await start("baseline", baselineEntry), await start("candidate")]
  const put = { connections, method: "PUT", body }
  for (const target of targets) await measure(target, { ...put, headers: target.headers, warmupS, durationS: 1 })
  const ratios: Array<number> = []
  for (let run = 1; run <= runs; run++) {
    const cpu: Record<string, number> = {}
    for (const target of run % 2 === 1 ? targets : [...targets].reverse()) {
      const m = await measure(target, { ...put, headers: target.headers, warmupS: 0, durationS })
      cpu[target.name] = m.cpu.serverUsPerRequest ?? Number.NaN
      log(
        `run ${run}/${runs} ${target.name}: ${Math.round(m.requestsPerSecond)} req/s, server ${m.cpu.serverUsPerRequest} µs/req, PostgreSQL ${m.cpu.databaseUsPerRequest} µs/req, non-2xx ${m.non2xx}`
      )
    }
    ratios.push(cpu.candidate / cpu.baseline)
    log(`run ${run}/${runs}: server CPU per put, candidate/baseline ${round(ratios.at(-1)!, 2)}; ${loadLine()}`)
  }
  console.log(
    `\nPUT a secret, ${connections} connections, ${durationS} s per server and run after ${warmupS} s warm-up each`
  )
  console.log(`candidate/baseline server CPU per put  ${formatRatio(ratios)} (lower is better)`)
  console.log(
    `per run: ${ratios.map((r) => r.toFixed(2)).join(", ")}; median ${spread(ratios).median.toFixed(2)}; ${loadLine()}`
  )
  console.log(`(${Os.cpus().length} CPUs, node ${process.version})`)
}

await runBench(main, timeoutS, stopLoad)
