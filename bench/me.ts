// `npm run bench -- [--duration <s>] [--connections <n>] [--warmup <s>] [--runs <n>] [--timeout <s>] [--save]`
//
// Loads `GET /v1/me` of the real hostplane server (embedded PostgreSQL, fresh data dir) and, one after the other,
// a bare node:http server answering the same bytes and the Fastify + node-postgres peer making the same reads on the
// same database, in repeated paired runs; prints each and the ratios with min/median/max. See README.md.
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import {
  benchDir,
  freePort,
  log,
  makeTempDir,
  parseOptions,
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
  stopLoad,
  type Target
} from "./support/load.ts"
import { gitCommit, machine, spread, writeReport } from "./support/report.ts"
import { cpuNote, cpuPerRequest, logStart, type PairedRun, printRequestTable, runPaired } from "./support/paired.ts"

// ---------------------------------------------------------------------------------------------------------------
// Options

const usage = `usage: npm run bench -- [options]
  --duration <s>      measured load per server, seconds (default 10)
  --connections <n>   concurrent keep-alive connections (default 50)
  --warmup <s>        unmeasured load before each measurement, seconds (default 3, 0 to skip)
  --runs <n>          paired runs, each loading bare, fastify and hostplane one after the other (default 3)
  --timeout <s>       abort everything after this many seconds (default max(120, 90 + 4 * runs * (warmup + duration)))
  --save              write the JSON result to bench/results/ instead of the system temp dir`

const { values: parsed, fail } = parseOptions(usage, loadOptionsConfig)
const { durationS, connections, warmupS, runs, timeoutS } = loadOptions(parsed, fail)
const save = parsed.save === true

const bareEntry = Path.join(benchDir, "bare-server.ts")
const fastifyEntry = Path.join(benchDir, "fastify-server.ts")
const floorEntry = Path.join(benchDir, "floor-server.ts")

// ---------------------------------------------------------------------------------------------------------------
// The run

const loadAtStart = Os.loadavg().map((value) => round(value, 2))

const main = async () => {
  logStart(loadAtStart, { durationS, warmupS, connections, timeoutS })
  const tempDir = await makeTempDir("hostplane-bench-")

  // 1. The real server, on a fresh data dir and a free port.
  const { child: hostplane, base, token } = await startHostplane(tempDir)
  log(`hostplane: ready, signed in as "bench"`)
  const headers = { authorization: `Bearer ${token}` }
  const me = await request("GET", `${base}/v1/me`, headers)
  if (me.status !== 200) throw new Error(`GET /v1/me answered ${me.status}: ${me.body.toString("utf8").slice(0, 400)}`)
  const again = await request("GET", `${base}/v1/me`, headers)
  // When the body is the same every time, autocannon checks every response against it (`mismatches`).
  const stableBody = again.status === 200 && again.body.equals(me.body)
  log(
    `hostplane: GET /v1/me → ${me.status}, ${me.body.length} bytes, ${me.headers["content-type"]}${stableBody ? "" : " (body varies between calls: not checked under load)"}`
  )

  // 2. The baseline, answering the very same bytes.
  const bodyFile = Path.join(tempDir, "me.json")
  await Fs.promises.writeFile(bodyFile, me.body)
  const barePort = await freePort()
  const bareBase = `http://127.0.0.1:${barePort}`
  log(`bare: starting on ${bareBase}`)
  const bare = startChild(
    "bare",
    [bareEntry],
    { ...process.env, BENCH_LISTEN: `127.0.0.1:${barePort}`, BENCH_BODY_FILE: bodyFile },
    Path.join(tempDir, "bare.log")
  )
  await waitFor(bare, 15_000, async () => {
    const reply = await request("GET", `${bareBase}/v1/me`, headers)
    if (reply.status !== 200 || !reply.body.equals(me.body))
      throw new Error(`bare answered ${reply.status}, ${reply.body.length} bytes`)
    return true
  })

  // Our floor: Effect HttpApi and a bearer middleware hashing the token, no database (the goal: hostplane >= 0.8x of it).
  const floorPort = await freePort()
  const floorBase = `http://127.0.0.1:${floorPort}`
  log(`floor: starting on ${floorBase}`)
  const floor = startChild(
    "floor",
    ["--conditions=@hostplane/source", floorEntry],
    { ...process.env, BENCH_LISTEN: `127.0.0.1:${floorPort}`, BENCH_BODY_FILE: bodyFile },
    Path.join(tempDir, "floor.log")
  )
  await waitFor(floor, 30_000, async () => {
    const reply = await request("GET", `${floorBase}/v1/me`, headers)
    if (reply.status !== 200 || !reply.body.equals(me.body)) {
      throw new Error(`floor answered ${reply.status}: ${reply.body.toString("utf8").slice(0, 300)}`)
    }
    return true
  })

  // The peer: Fastify + node-postgres making the same two reads on hostplane's own database.
  const fastifyPort = await freePort()
  const fastifyBase = `http://127.0.0.1:${fastifyPort}`
  log(`fastify: starting on ${fastifyBase}`)
  const fastify = startChild(
    "fastify",
    [fastifyEntry],
    {
      ...process.env,
      BENCH_LISTEN: `127.0.0.1:${fastifyPort}`,
      BENCH_DATABASE_URL: embeddedDatabaseUrl(Path.join(tempDir, "hostplane"))
    },
    Path.join(tempDir, "fastify.log")
  )
  await waitFor(fastify, 15_000, async () => {
    const reply = await request("GET", `${fastifyBase}/v1/me`, headers)
    if (reply.status !== 200 || !reply.body.equals(me.body))
      throw new Error(`fastify answered ${reply.status}: ${reply.body.toString("utf8").slice(0, 300)}`)
    return true
  })

  // 3. + 4. One after the other, never at the same time; the same request (bearer header included) to each; `runs`
  // times, so that each ratio comes from servers measured minutes apart in the same conditions.
  const expectBody = stableBody ? me.body.toString("utf8") : undefined
  const targets: ReadonlyArray<Target> = [
    { name: "bare", url: `${bareBase}/v1/me`, child: bare, withChildren: false },
    { name: "floor", url: `${floorBase}/v1/me`, child: floor, withChildren: false },
    // Both on hostplane's embedded PostgreSQL: its processes' CPU during each load is that server's.
    { name: "fastify", url: `${fastifyBase}/v1/me`, child: fastify, withChildren: false, database: hostplane.pid },
    { name: "hostplane", url: `${base}/v1/me`, child: hostplane, withChildren: true, database: hostplane.pid }
  ]
  const paired = await runPaired(targets, runs, {
    connections,
    warmupS,
    durationS,
    method: "GET",
    headers,
    expectBody
  })

  // 5. Table and JSON.
  const ratios = {
    hostplaneToFastify: paired.map((p) => p.results.hostplane.requestsPerSecond / p.results.fastify.requestsPerSecond),
    hostplaneToFloor: paired.map((p) => p.results.hostplane.requestsPerSecond / p.results.floor.requestsPerSecond),
    hostplaneToBare: paired.map((p) => p.results.hostplane.requestsPerSecond / p.results.bare.requestsPerSecond),
    fastifyToBare: paired.map((p) => p.results.fastify.requestsPerSecond / p.results.bare.requestsPerSecond),
    p99HostplaneToFastify: paired.map((p) => p.results.hostplane.latencyMs.p99 / p.results.fastify.latencyMs.p99),
    cpuHostplaneToFastify: paired.map((p) => cpuOf(p.results.hostplane) / cpuOf(p.results.fastify)),
    cpuHostplaneToFloor: paired.map((p) => cpuOf(p.results.hostplane) / cpuOf(p.results.floor))
  }
  const report = {
    benchmark: "GET /v1/me: hostplane vs Fastify + node-postgres vs our Effect floor vs bare node:http",
    date: new Date().toISOString(),
    commit: gitCommit(),
    ...machine(),
    loadAverage: { atStart: loadAtStart, atEnd: Os.loadavg().map((value) => round(value, 2)) },
    options: { durationS, warmupS, connections, runs, pipelining: 1 },
    bodyBytes: me.body.length,
    bodyCheckedUnderLoad: stableBody,
    runs: paired,
    ratios: Object.fromEntries(Object.entries(ratios).map(([name, values]) => [name, spread(values)]))
  }
  printTable(paired, ratios, me.body.length)

  await writeReport("me", report, save)
  const failures = paired.flatMap((p) =>
    Object.values(p.results).filter((m) => m.non2xx + m.errors + m.timeouts + m.mismatches > 0)
  )
  for (const m of failures) {
    console.log(
      `warning: ${m.name} had ${m.non2xx} non-2xx, ${m.errors} errors, ${m.timeouts} timeouts, ${m.mismatches} body mismatches (status codes ${JSON.stringify(m.statusCodes)})`
    )
  }
}

/** Server and database CPU per request in microseconds (no database: 0; NaN when not measured). */
const cpuOf = (m: Measurement) => cpuPerRequest(m, 0)

const printTable = (
  paired: ReadonlyArray<PairedRun>,
  ratios: Record<
    | "hostplaneToFastify"
    | "hostplaneToFloor"
    | "hostplaneToBare"
    | "fastifyToBare"
    | "p99HostplaneToFastify"
    | "cpuHostplaneToFastify"
    | "cpuHostplaneToFloor",
    Array<number>
  >,
  bodyBytes: number
) => {
  printRequestTable(
    `GET /v1/me, ${bodyBytes}-byte JSON body, ${connections} connections, ${durationS} s each (after ${warmupS} s warm-up), one server at a time; medians of ${paired.length} paired runs`,
    paired,
    ["hostplane", "fastify", "floor", "bare"],
    [
      ["hostplane/fastify req/s", ratios.hostplaneToFastify],
      ["hostplane/floor req/s", ratios.hostplaneToFloor],
      ["hostplane/bare req/s", ratios.hostplaneToBare],
      ["fastify/bare req/s", ratios.fastifyToBare],
      ["hostplane/fastify p99", ratios.p99HostplaneToFastify, "(lower is better)"],
      ["hostplane/fastify CPU", ratios.cpuHostplaneToFastify, cpuNote],
      ["hostplane/floor CPU", ratios.cpuHostplaneToFloor, cpuNote]
    ]
  )
  const pss = Math.max(...paired.map((p) => p.results.hostplane.memory.childrenPeakPssMiB ?? 0))
  if (pss > 0) {
    console.log(
      `(hostplane's embedded PostgreSQL, not in its RSS above: peak ${pss.toFixed(1)} MiB PSS; the peer uses it too)`
    )
  }
}

// 6. Whatever happens: a time bound, then the load stopped, the children stopped and the temp dir removed.
await runBench(main, timeoutS, stopLoad)
