// `npm run bench:me-ab -- --baseline <checkout> [options]`
//
// Server CPU and requests/s of a warm `GET /v1/me` on this tree against a baseline checkout: both servers run side by
// side, each with its own embedded PostgreSQL, and are loaded one after the other with the order swapped every run.
// On a shared machine CPU per request drifts by tens of percent within minutes, so a change is judged by these
// paired ratios, not by two `npm run bench` runs taken apart. Runs directly on Node 22 type stripping.
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { log, makeTempDir, parseOptions, round, runBench, startHostplane } from "./support/harness.ts"
import { loadOptions, loadOptionsConfig, measure, stopLoad } from "./support/load.ts"
import { formatRatio, loadLine, spread } from "./support/report.ts"

const usage = `usage: npm run bench:me-ab -- --baseline <checkout> [options]
  --baseline <dir>    another checkout of hostplane with its node_modules (git worktree add, cp -a node_modules)
  --candidate <dir>   the checkout measured against it (default this one): two older trees can be compared
  --duration <s>      measured load per server and run, seconds (default 10)
  --connections <n>   concurrent keep-alive connections (default 50)
  --warmup <s>        unmeasured load of each server once before the first run, seconds (default 10)
  --runs <n>          paired runs (default 4)
  --timeout <s>       abort everything after this many seconds`

const { values: parsed, fail } = parseOptions(usage, {
  ...loadOptionsConfig,
  baseline: { type: "string" },
  candidate: { type: "string" }
})
const { durationS, connections, timeoutS } = loadOptions(
  { ...parsed, warmup: parsed.warmup ?? "10", runs: parsed.runs ?? "4" },
  fail
)
const warmupS = Number(parsed.warmup ?? "10")
const runs = Number(parsed.runs ?? "4")
const baselineEntry = Path.resolve(
  parsed.baseline ?? fail("--baseline is required"),
  "packages/server/src/bin/server.ts"
)
if (!Fs.existsSync(baselineEntry)) fail(`no server at ${baselineEntry}`)
const candidateEntry =
  parsed.candidate === undefined ? undefined : Path.resolve(parsed.candidate, "packages/server/src/bin/server.ts")
if (candidateEntry !== undefined && !Fs.existsSync(candidateEntry)) fail(`no server at ${candidateEntry}`)

const main = async () => {
  const tempDir = await makeTempDir("hostplane-bench-me-ab-")
  const start = async (name: string, entry?: string) => {
    const dir = Path.join(tempDir, name)
    await Fs.promises.mkdir(dir, { mode: 0o755 })
    const { child, base, token } = await startHostplane(dir, {}, entry)
    const headers = { authorization: `Bearer ${token}` }
    return { name, url: `${base}/v1/me`, child, withChildren: true, database: child.pid, headers }
  }
  const targets = [await start("baseline", baselineEntry), await start("candidate", candidateEntry)]
  const get = { connections, method: "GET" }
  for (const target of targets) await measure(target, { ...get, headers: target.headers, warmupS, durationS: 1 })
  const cpuRatios: Array<number> = []
  const rateRatios: Array<number> = []
  for (let run = 1; run <= runs; run++) {
    const cpu: Record<string, number> = {}
    const rate: Record<string, number> = {}
    for (const target of run % 2 === 1 ? targets : [...targets].reverse()) {
      const m = await measure(target, { ...get, headers: target.headers, warmupS: 0, durationS })
      cpu[target.name] = m.cpu.serverUsPerRequest ?? Number.NaN
      rate[target.name] = m.requestsPerSecond
      log(
        `run ${run}/${runs} ${target.name}: ${Math.round(m.requestsPerSecond)} req/s, server ${m.cpu.serverUsPerRequest} µs/req, client ${m.cpu.clientUsPerRequest} µs/req, non-2xx ${m.non2xx}`
      )
    }
    cpuRatios.push(cpu.candidate / cpu.baseline)
    rateRatios.push(rate.candidate / rate.baseline)
    log(
      `run ${run}/${runs}: candidate/baseline server CPU per request ${round(cpuRatios.at(-1)!, 2)}, req/s ${round(rateRatios.at(-1)!, 2)}; ${loadLine()}`
    )
  }
  console.log(
    `\nGET /v1/me, ${connections} connections, ${durationS} s per server and run after ${warmupS} s warm-up each`
  )
  console.log(`candidate/baseline server CPU per request  ${formatRatio(cpuRatios)} (lower is better)`)
  console.log(`candidate/baseline req/s                   ${formatRatio(rateRatios)}`)
  console.log(
    `CPU per run: ${cpuRatios.map((r) => r.toFixed(2)).join(", ")}; median ${spread(cpuRatios).median.toFixed(2)}; ${loadLine()}`
  )
  console.log(`(${Os.cpus().length} CPUs, node ${process.version})`)
}

await runBench(main, timeoutS, stopLoad)
