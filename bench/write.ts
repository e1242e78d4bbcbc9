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
import { embeddedDatabaseUrl, loadOptions, loadOptionsConfig, stopLoad, type Target } from "./support/load.ts"
import { gitCommit, machine, spread, writeReport } from "./support/report.ts"
import { cpuNote, cpuPerRequest, logStart, type PairedRun, printRequestTable, runPaired } from "./support/paired.ts"

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
  logStart(loadAtStart, { durationS, warmupS, connections, timeoutS })
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
  const paired = await runPaired(targets, runs, { connections, warmupS, durationS, method: "PUT", headers, body })

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

const printTable = (
  paired: ReadonlyArray<PairedRun>,
  ratios: Record<"hostplaneToFastify" | "p99HostplaneToFastify" | "cpuHostplaneToFastify", Array<number>>
) =>
  printRequestTable(
    `PUT a secret (session, org lock, membership, sealed upsert, audit row, node revision: atomic), ${connections} connections, ${durationS} s each (after ${warmupS} s warm-up), one server at a time; medians of ${paired.length} paired runs`,
    paired,
    ["hostplane", "fastify"],
    [
      ["hostplane/fastify req/s", ratios.hostplaneToFastify],
      ["hostplane/fastify p99", ratios.p99HostplaneToFastify, "(lower is better)"],
      ["hostplane/fastify CPU", ratios.cpuHostplaneToFastify, cpuNote]
    ]
  )

await runBench(main, timeoutS, stopLoad)
