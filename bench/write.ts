// `npm run bench:write -- [--duration <s>] [--connections <n>] [--warmup <s>] [--runs <n>] [--timeout <s>] [--save]`
//
// An authenticated write: `PUT .../secrets/{name}` on the real hostplane server (embedded PostgreSQL, fresh data dir)
// and, one after the other, on the Fastify + node-postgres peer doing the same transaction on the same database and
// with the same sealing key, in repeated paired runs; prints each and the ratio with min/median/max. See README.md.
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import * as Os from "node:os"
import * as Path from "node:path"
import {
  benchDir,
  freePort,
  log,
  makeTempDir,
  parseOptions,
  type Reply,
  request,
  round,
  runBench,
  startChild,
  startHostplane,
  waitFor
} from "./support/harness.ts"
import {
  embeddedDatabaseUrl,
  loadOptions,
  loadOptionsConfig,
  type Measurement,
  measure,
  stopLoad,
  type Target
} from "./support/load.ts"
import { alignColumns, formatRatio, gitCommit, loadLine, machine, spread, writeReport } from "./support/report.ts"

const usage = `usage: npm run bench:write -- [options]
  --duration <s>      measured load per server, seconds (default 10)
  --connections <n>   concurrent keep-alive connections (default 50)
  --warmup <s>        unmeasured load before each measurement, seconds (default 3, 0 to skip)
  --runs <n>          paired runs, each loading fastify and hostplane one after the other (default 3)
  --timeout <s>       abort everything after this many seconds (default max(120, 90 + 4 * runs * (warmup + duration)))
  --save              write the JSON result to bench/results/ instead of the system temp dir`

const { values: parsed, fail } = parseOptions(usage, loadOptionsConfig)
const { durationS, connections, warmupS, runs, timeoutS } = loadOptions(parsed, fail)
const save = parsed.save === true

const org = "bench-writes"
const project = "site"
const secretPath = `/v1/orgs/${org}/projects/${project}/secrets/BENCH_SECRET`
// A typical secret: an API key's worth of text.
const body = JSON.stringify({ value: "sk_live_".padEnd(64, "x") })

/** The reply's JSON body, when it has the expected status. */
const json = (reply: Reply, what: string, status: number) => {
  const text = reply.body.toString("utf8")
  if (reply.status !== status) throw new Error(`${what} answered ${reply.status}: ${text.slice(0, 400)}`)
  return JSON.parse(text) as Record<string, unknown>
}

const loadAtStart = Os.loadavg().map((value) => round(value, 2))

const main = async () => {
  if (loadAtStart[0] > Os.cpus().length) {
    log(
      `warning: load average ${loadAtStart[0]} on ${Os.cpus().length} CPUs: the machine is busy, expect noisy numbers`
    )
  }
  log(
    `node ${process.version}, ${Os.cpus().length} CPUs; ${durationS} s per server after ${warmupS} s warm-up, ${connections} connections; time bound ${timeoutS} s`
  )
  const tempDir = await makeTempDir("hostplane-bench-write-")

  // 1. The real server, an org and a project to write to.
  const { child: hostplane, base, token } = await startHostplane(tempDir)
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
  const create = async (path: string, payload: string, what: string) =>
    json(await request("POST", `${base}${path}`, headers, payload, 10_000), what, 201)
  await create("/v1/orgs", JSON.stringify({ name: "Bench writes", slug: org }), "org create")
  await create(`/v1/orgs/${org}/projects`, JSON.stringify({ name: project }), "project create")
  const first = json(await request("PUT", `${base}${secretPath}`, headers, body), "hostplane secret put", 200)
  log(`hostplane: ready; PUT ${secretPath} → 200 ${JSON.stringify(first)}`)

  // 2. The peer, on hostplane's database and sealing key; its first write must be the next version of the same secret.
  const dataDir = Path.join(tempDir, "hostplane")
  const fastifyPort = await freePort()
  const fastifyBase = `http://127.0.0.1:${fastifyPort}`
  log(`fastify: starting on ${fastifyBase}`)
  const fastify = startChild(
    "fastify",
    [Path.join(benchDir, "fastify-server.ts")],
    {
      ...process.env,
      BENCH_LISTEN: `127.0.0.1:${fastifyPort}`,
      BENCH_DATABASE_URL: embeddedDatabaseUrl(dataDir),
      BENCH_SEAL_KEY_FILE: Path.join(dataDir, "seal.key")
    },
    Path.join(tempDir, "fastify.log")
  )
  const peerFirst = await waitFor(fastify, 15_000, async () =>
    json(await request("PUT", `${fastifyBase}${secretPath}`, headers, body), "fastify secret put", 200)
  )
  const listed = json(
    await request("GET", `${base}/v1/orgs/${org}/projects/${project}/secrets`, headers),
    "secret list",
    200
  )
  const items = listed.items as Array<Record<string, unknown>>
  if (peerFirst.version !== (first.version as number) + 1 || items[0]?.version !== peerFirst.version) {
    throw new Error(
      `the peer's write is not the next version: ${JSON.stringify(first)}, ${JSON.stringify(peerFirst)}, ${JSON.stringify(items)}`
    )
  }
  log(`fastify: ready; PUT → 200 ${JSON.stringify(peerFirst)}, which hostplane lists`)

  // 3. One after the other, the same request to each, `runs` times.
  const targets: ReadonlyArray<Target> = [
    // Both on hostplane's embedded PostgreSQL: its processes' CPU during each load is that server's.
    {
      name: "fastify",
      url: `${fastifyBase}${secretPath}`,
      child: fastify,
      withChildren: false,
      database: hostplane.pid
    },
    { name: "hostplane", url: `${base}${secretPath}`, child: hostplane, withChildren: true, database: hostplane.pid }
  ]
  const paired: Array<PairedRun> = []
  for (let run = 1; run <= runs; run++) {
    const results: Record<string, Measurement> = {}
    for (const target of targets) {
      results[target.name] = await measure(target, { connections, warmupS, durationS, method: "PUT", headers, body })
    }
    const loadAverage = Os.loadavg().map((value) => round(value, 2))
    paired.push({ results, loadAverage })
    log(
      `run ${run}/${runs}: ${targets.map((t) => `${t.name} ${Math.round(results[t.name].requestsPerSecond)} req/s`).join(", ")}; ${loadLine()}`
    )
  }

  // 4. Every write counted: the version is the number of puts that answered 200.
  const after = json(
    await request("GET", `${base}/v1/orgs/${org}/projects/${project}/secrets`, headers),
    "secret list",
    200
  )
  const version = (after.items as Array<Record<string, unknown>>)[0]?.version
  const ok = paired.reduce(
    (sum, p) => sum + Object.values(p.results).reduce((n, m) => n + (m.statusCodes["200"] ?? 0), 0),
    0
  )
  log(`secret version after the load: ${version} (the 200s counted in the measured runs: ${ok}, plus warm-ups)`)

  const ratios = {
    hostplaneToFastify: paired.map((p) => p.results.hostplane.requestsPerSecond / p.results.fastify.requestsPerSecond),
    p99HostplaneToFastify: paired.map((p) => p.results.hostplane.latencyMs.p99 / p.results.fastify.latencyMs.p99),
    cpuHostplaneToFastify: paired.map((p) => cpuPerRequest(p.results.hostplane) / cpuPerRequest(p.results.fastify))
  }
  printTable(paired, ratios)
  const report = {
    benchmark: "PUT a secret: hostplane vs Fastify + node-postgres doing the same transaction",
    date: new Date().toISOString(),
    commit: gitCommit(),
    ...machine(),
    loadAverage: { atStart: loadAtStart, atEnd: Os.loadavg().map((value) => round(value, 2)) },
    options: { durationS, warmupS, connections, runs, pipelining: 1 },
    finalVersion: version,
    runs: paired,
    cpuUsPerRequest: Object.fromEntries(
      targets.map((t) => [
        t.name,
        {
          server: spread(paired.map((p) => p.results[t.name].cpu.serverUsPerRequest ?? Number.NaN)),
          database: spread(paired.map((p) => p.results[t.name].cpu.databaseUsPerRequest ?? Number.NaN))
        }
      ])
    ),
    ratios: Object.fromEntries(Object.entries(ratios).map(([name, values]) => [name, spread(values)]))
  }
  await writeReport("write", report, save)
  for (const m of paired.flatMap((p) => Object.values(p.results))) {
    if (m.non2xx + m.errors + m.timeouts > 0) {
      console.log(
        `warning: ${m.name} had ${m.non2xx} non-2xx, ${m.errors} errors, ${m.timeouts} timeouts (status codes ${JSON.stringify(m.statusCodes)})`
      )
    }
  }
}

/** Server and database CPU per request, in microseconds (NaN when not measured). */
const cpuPerRequest = (m: Measurement) =>
  (m.cpu.serverUsPerRequest ?? Number.NaN) + (m.cpu.databaseUsPerRequest ?? Number.NaN)

interface PairedRun {
  readonly results: Record<string, Measurement>
  readonly loadAverage: ReadonlyArray<number>
}

const printTable = (
  paired: ReadonlyArray<PairedRun>,
  ratios: Record<"hostplaneToFastify" | "p99HostplaneToFastify" | "cpuHostplaneToFastify", Array<number>>
) => {
  const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : "n/a")
  const median = (name: string, pick: (m: Measurement) => number) =>
    spread(paired.map((p) => pick(p.results[name]))).median
  const row = (name: string) => [
    name,
    fixed(
      median(name, (m) => m.requestsPerSecond),
      0
    ),
    fixed(
      median(name, (m) => m.latencyMs.p50),
      2
    ),
    fixed(
      median(name, (m) => m.latencyMs.p99),
      2
    ),
    String(paired.reduce((sum, p) => sum + p.results[name].non2xx, 0)),
    String(paired.reduce((sum, p) => sum + p.results[name].errors + p.results[name].timeouts, 0)),
    fixed(Math.max(...paired.map((p) => p.results[name].memory.peakRssMiB ?? 0)), 1),
    fixed(
      median(name, (m) => m.cpu.serverUsPerRequest ?? Number.NaN),
      0
    ),
    fixed(
      median(name, (m) => m.cpu.databaseUsPerRequest ?? Number.NaN),
      0
    )
  ]
  const lines = alignColumns([
    [
      "",
      "req/s",
      "p50 ms",
      "p99 ms",
      "non-2xx",
      "errors",
      "peak RSS MiB",
      "server CPU µs/req",
      "PostgreSQL CPU µs/req"
    ],
    row("hostplane"),
    row("fastify")
  ])
  console.log(
    `\nPUT a secret (one transaction: session, org lock, membership, sealed upsert, audit row, node revision), ${connections} connections, ${durationS} s each (after ${warmupS} s warm-up), one server at a time; medians of ${paired.length} paired runs`
  )
  for (const line of lines) console.log(line)
  console.log("-".repeat(lines[0].length))
  console.log(`hostplane/fastify req/s  ${formatRatio(ratios.hostplaneToFastify)}`)
  console.log(`hostplane/fastify p99    ${formatRatio(ratios.p99HostplaneToFastify)} (lower is better)`)
  console.log(
    `hostplane/fastify CPU    ${formatRatio(ratios.cpuHostplaneToFastify)} per request, server and PostgreSQL (lower is better)`
  )
  console.log(`load average after each run: ${paired.map((p) => p.loadAverage.join(" ")).join(" | ")}; ${loadLine()}`)
}

await runBench(main, timeoutS, stopLoad)
