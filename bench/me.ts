// `npm run bench -- [--duration <s>] [--connections <n>] [--warmup <s>] [--timeout <s>] [--save]`
//
// Loads `GET /v1/me` of the real hostplane server (embedded PostgreSQL, fresh data dir) and, one after the other,
// a bare node:http server answering the same bytes, then prints both and the ratios hostplane/bare. See README.md.
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import autocannon from "autocannon"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"

// ---------------------------------------------------------------------------------------------------------------
// Options

const usage = `usage: npm run bench -- [options]
  --duration <s>      measured load per server, seconds (default 10)
  --connections <n>   concurrent keep-alive connections (default 10)
  --warmup <s>        unmeasured load before each measurement, seconds (default 3, 0 to skip)
  --timeout <s>       abort everything after this many seconds (default max(120, 90 + 2 * (warmup + duration)))
  --save              write the JSON result to bench/results/ instead of the system temp dir`

const parsed = (() => {
  try {
    return parseArgs({
      options: {
        duration: { type: "string" },
        connections: { type: "string" },
        warmup: { type: "string" },
        timeout: { type: "string" },
        save: { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false }
      },
      strict: true,
      allowPositionals: false
    }).values
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : String(error)}\n${usage}`)
    process.exit(2)
  }
})()
if (parsed.help) {
  console.log(usage)
  process.exit(0)
}

const numberOption = (name: string, raw: string | undefined, fallback: number, check: (n: number) => boolean) => {
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (raw.trim() === "" || !Number.isFinite(value) || !check(value)) {
    console.error(`invalid --${name} ${JSON.stringify(raw)}\n${usage}`)
    process.exit(2)
  }
  return value
}

const durationS = numberOption("duration", parsed.duration, 10, (n) => n >= 1 && n <= 3600)
const connections = numberOption(
  "connections",
  parsed.connections,
  10,
  (n) => Number.isInteger(n) && n >= 1 && n <= 1000
)
const warmupS = numberOption("warmup", parsed.warmup, 3, (n) => n >= 0 && n <= 600)
const timeoutS = numberOption("timeout", parsed.timeout, Math.max(120, 90 + 2 * (warmupS + durationS)), (n) => n > 0)
const save = parsed.save === true

// ---------------------------------------------------------------------------------------------------------------
// Paths and small helpers

const benchDir = Path.dirname(fileURLToPath(import.meta.url))
const repoRoot = Path.resolve(benchDir, "..")
const serverEntry = Path.join(repoRoot, "packages/http/src/bin/server.ts")
const bareEntry = Path.join(benchDir, "bare-server.ts")
const startedAt = Date.now()

const log = (message: string) =>
  console.error(`[bench ${((Date.now() - startedAt) / 1000).toFixed(1).padStart(5)}s] ${message}`)
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** The last `lines` lines of a child's log file, for failure messages. */
const tail = (file: string, lines = 30): string => {
  try {
    const text = Fs.readFileSync(file, "utf8").trimEnd()
    return text
      .split("\n")
      .slice(-lines)
      .map((line) => `    | ${line.slice(0, 400)}`)
      .join("\n")
  } catch {
    return "    | (no log)"
  }
}

/** A port the kernel reports free on 127.0.0.1 right now. */
const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => (port > 0 ? resolve(port) : reject(new Error("no free port"))))
    })
  })

interface Reply {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: Buffer
}

/** One request on a fresh connection (`agent: false` → `Connection: close`), so no socket outlives it. */
const request = (method: string, url: string, headers: Record<string, string> = {}, body?: string) =>
  new Promise<Reply>((resolve, reject) => {
    const req = Http.request(url, { method, headers, agent: false, timeout: 5000 }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("error", reject)
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
    })
    req.on("timeout", () => req.destroy(new Error(`${method} ${url}: no answer within 5 s`)))
    req.on("error", reject)
    req.end(body)
  })

// ---------------------------------------------------------------------------------------------------------------
// Abort: the time bound, signals and unexpected child exits all reject this one promise

const abort = Promise.withResolvers<never>()
abort.promise.catch(() => undefined)

// ---------------------------------------------------------------------------------------------------------------
// Children: each in its own process group (detached), so the whole tree (the server's PostgreSQL too) can be killed

interface Child {
  readonly name: string
  readonly pid: number
  readonly logFile: string
  readonly process: ChildProcess
  readonly exit: Promise<void>
  exited: boolean
  stopping: boolean
}

const children: Array<Child> = []
let tempDir: string | undefined

const startChild = (name: string, args: Array<string>, env: NodeJS.ProcessEnv, logFile: string): Child => {
  const fd = Fs.openSync(logFile, "a")
  let proc: ChildProcess
  try {
    // Output goes to a file, not a pipe: nothing in this process has to drain it while it generates load.
    proc = spawn(process.execPath, args, { cwd: repoRoot, env, stdio: ["ignore", fd, fd], detached: true })
  } finally {
    Fs.closeSync(fd)
  }
  if (proc.pid === undefined) throw new Error(`${name}: could not spawn ${process.execPath}`)
  const exited = Promise.withResolvers<void>()
  const child: Child = {
    name,
    pid: proc.pid,
    logFile,
    process: proc,
    exit: exited.promise,
    exited: false,
    stopping: false
  }
  proc.on("exit", (code, signal) => {
    child.exited = true
    exited.resolve()
    if (!child.stopping) {
      abort.reject(
        new Error(`${name} exited unexpectedly (${signal ?? `code ${code}`}); its log ends with:\n${tail(logFile)}`)
      )
    }
  })
  proc.on("error", (error) => abort.reject(new Error(`${name}: ${error.message}`)))
  children.push(child)
  return child
}

const killGroup = (pid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(-pid, signal)
  } catch {
    // ESRCH: the group is already gone
  }
}

/** SIGTERM (the server stops its PostgreSQL and exits), then SIGKILL for whatever is left of the group. */
const stopChild = async (child: Child) => {
  child.stopping = true
  if (!child.exited) {
    try {
      process.kill(child.pid, "SIGTERM")
    } catch {
      // already gone
    }
    await Promise.race([child.exit, sleep(15_000)])
    if (!child.exited) log(`${child.name} ignored SIGTERM for 15 s: killing its process group`)
  }
  killGroup(child.pid, "SIGKILL")
  if (!child.exited) await Promise.race([child.exit, sleep(2_000)])
}

let cleaning: Promise<void> | undefined
const cleanup = () =>
  (cleaning ??= (async () => {
    await Promise.all(children.map(stopChild))
    if (tempDir !== undefined) {
      await Fs.promises.rm(tempDir, { recursive: true, force: true, maxRetries: 3 }).catch((error: unknown) => {
        log(`could not remove ${tempDir}: ${messageOf(error)}`)
      })
      tempDir = undefined
    }
  })())

// Last resort when the process exits some other way: no async work possible here.
process.on("exit", () => {
  for (const child of children) if (!child.exited) killGroup(child.pid, "SIGKILL")
  if (tempDir !== undefined) Fs.rmSync(tempDir, { recursive: true, force: true })
})
let signalled = 0
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    if (++signalled > 1) process.exit(130) // second signal: the exit hook kills the children and removes the temp dir
    abort.reject(new Error(`interrupted by ${signal}`))
  })
}

/** Retries `attempt` every 200 ms until it yields a value; fails with the child's log tail after `ms`. */
const waitFor = async <A>(child: Child, ms: number, attempt: () => Promise<A | undefined>): Promise<A> => {
  const deadline = Date.now() + ms
  let last = "no answer yet"
  while (Date.now() < deadline) {
    try {
      const value = await attempt()
      if (value !== undefined) return value
      last = "not ready"
    } catch (error) {
      last = messageOf(error)
    }
    if (child.exited) break
    await sleep(200)
  }
  throw new Error(`${child.name} not ready after ${ms / 1000} s (${last}); its log ends with:\n${tail(child.logFile)}`)
}

// ---------------------------------------------------------------------------------------------------------------
// Memory: peak VmRSS of the server process under load (and, for hostplane, the PSS of its PostgreSQL tree)

const hasProc = Fs.existsSync("/proc/self/status")

const statusKiB = (pid: number, field: string): number | undefined => {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(Fs.readFileSync(`/proc/${pid}/status`, "utf8"))
    return match === null ? undefined : Number(match[1])
  } catch {
    return undefined
  }
}

const psRssKiB = (pid: number): number | undefined => {
  try {
    const value = Number(execFileSync("ps", ["-o", "rss=", "-p", String(pid)], { encoding: "utf8" }).trim())
    return Number.isFinite(value) && value > 0 ? value : undefined
  } catch {
    return undefined
  }
}

const descendants = (root: number): Array<number> => {
  const byParent = new Map<number, Array<number>>()
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = Fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      byParent.set(ppid, [...(byParent.get(ppid) ?? []), Number(entry)])
    } catch {
      // exited meanwhile
    }
  }
  const found: Array<number> = []
  const queue = [root]
  while (queue.length > 0) {
    for (const pid of byParent.get(queue.shift() as number) ?? []) {
      found.push(pid)
      queue.push(pid)
    }
  }
  return found
}

/** Sum of PSS (shared pages split between sharers, so PostgreSQL's shared buffers count once) over `pids`. */
const pssKiB = (pids: ReadonlyArray<number>): number | undefined => {
  let total: number | undefined
  for (const pid of pids) {
    try {
      const match = /^Pss:\s+(\d+) kB/m.exec(Fs.readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))
      if (match !== null) total = (total ?? 0) + Number(match[1])
    } catch {
      // exited meanwhile, or not readable
    }
  }
  return total
}

interface MemoryReport {
  /** Highest VmRSS seen while sampling (every 100 ms; `ps` every 500 ms off Linux). */
  readonly peakRssMiB: number | null
  /** VmHWM at the end: the process' lifetime peak, start-up included (Linux only). */
  readonly lifetimePeakRssMiB: number | null
  /** Highest summed PSS of the server's child processes (hostplane: its embedded PostgreSQL), every 1 s (Linux). */
  readonly childrenPeakPssMiB: number | null
  readonly samples: number
}

const sampleMemory = (pid: number, withChildren: boolean) => {
  let peakKiB = 0
  let childrenPeakKiB: number | undefined
  let samples = 0
  const rss = () => {
    const value = hasProc ? statusKiB(pid, "VmRSS") : psRssKiB(pid)
    if (value !== undefined) {
      samples++
      peakKiB = Math.max(peakKiB, value)
    }
  }
  const childrenPss = () => {
    const value = pssKiB(descendants(pid))
    if (value !== undefined) childrenPeakKiB = Math.max(childrenPeakKiB ?? 0, value)
  }
  rss()
  const timers = [setInterval(rss, hasProc ? 100 : 500)]
  if (withChildren && hasProc) {
    childrenPss()
    timers.push(setInterval(childrenPss, 1000))
  }
  return {
    stop: (): MemoryReport => {
      for (const timer of timers) clearInterval(timer)
      rss()
      const hwm = hasProc ? statusKiB(pid, "VmHWM") : undefined
      const mib = (kib: number | undefined) => (kib === undefined || kib === 0 ? null : round(kib / 1024, 1))
      return {
        peakRssMiB: mib(peakKiB),
        lifetimePeakRssMiB: mib(hwm),
        childrenPeakPssMiB: mib(childrenPeakKiB),
        samples
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Load (autocannon runs in this process; the servers run in theirs)

interface AutocannonResult {
  readonly duration: number
  readonly errors: number
  readonly timeouts: number
  readonly mismatches: number
  readonly non2xx: number
  readonly resets: number
  readonly "2xx": number
  readonly statusCodeStats: Record<string, { readonly count: number }>
  readonly latency: Record<string, number>
  readonly requests: Record<string, number>
  readonly throughput: Record<string, number>
}
interface AutocannonInstance {
  stop(): void
  on(event: "response", listener: (client: unknown, status: number, bytes: number, ms: number) => void): void
}
type Autocannon = (
  options: Record<string, unknown>,
  done: (error: Error | null, result: AutocannonResult) => void
) => AutocannonInstance

let currentLoad: AutocannonInstance | undefined
/** Set once the run is over (done, failed or aborted): no new load starts after that. */
let finished = false

const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits

/**
 * One autocannon run. Latencies are also recorded here from the `response` events, in fractional milliseconds:
 * autocannon's own histogram keeps whole milliseconds, too coarse for a bare server answering in well under 1 ms.
 */
const load = (options: Record<string, unknown>) =>
  new Promise<{ result: AutocannonResult; latencies: Float64Array }>((resolve, reject) => {
    if (finished) return reject(new Error("the run is over"))
    let latencies = new Float64Array(1 << 16)
    let count = 0
    const instance = (autocannon as unknown as Autocannon)(options, (error, result) => {
      currentLoad = undefined
      if (error !== null && error !== undefined) reject(error)
      else resolve({ result, latencies: latencies.subarray(0, count) })
    })
    currentLoad = instance
    instance.on("response", (_client, _status, _bytes, ms) => {
      if (count === latencies.length) {
        const grown = new Float64Array(latencies.length * 2)
        grown.set(latencies)
        latencies = grown
      }
      latencies[count++] = ms
    })
  })

const percentile = (sorted: Float64Array, q: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]

interface Target {
  readonly name: string
  readonly url: string
  readonly child: Child
  readonly withChildren: boolean
}

interface Measurement {
  readonly name: string
  readonly url: string
  readonly requestsPerSecond: number
  readonly requestsTotal: number
  readonly seconds: number
  readonly latencyMs: {
    readonly p50: number
    readonly p90: number
    readonly p99: number
    readonly max: number
    readonly mean: number
  }
  readonly autocannonLatencyMs: { readonly p50: number; readonly p99: number }
  readonly non2xx: number
  readonly errors: number
  readonly timeouts: number
  readonly mismatches: number
  readonly statusCodes: Record<string, number>
  readonly memory: MemoryReport
}

const measure = async (target: Target, headers: Record<string, string>, expectBody: string | undefined) => {
  const options = {
    url: target.url,
    method: "GET",
    headers,
    connections,
    pipelining: 1,
    timeout: 10,
    ...(expectBody === undefined ? {} : { expectBody })
  }
  const memory = sampleMemory(target.child.pid, target.withChildren)
  let report: MemoryReport | undefined
  try {
    if (warmupS > 0) {
      log(`${target.name}: warm-up ${warmupS} s, ${connections} connections`)
      await load({ ...options, duration: warmupS })
    }
    log(`${target.name}: measuring ${durationS} s, ${connections} connections`)
    const { result, latencies } = await load({ ...options, duration: durationS })
    report = memory.stop()
    const sorted = latencies.slice().sort()
    const mean = sorted.reduce((sum, value) => sum + value, 0) / Math.max(1, sorted.length)
    const measurement: Measurement = {
      name: target.name,
      url: target.url,
      requestsPerSecond: round(result.requests.average, 1),
      requestsTotal: result.requests.total,
      seconds: result.duration,
      latencyMs: {
        p50: round(percentile(sorted, 0.5), 3),
        p90: round(percentile(sorted, 0.9), 3),
        p99: round(percentile(sorted, 0.99), 3),
        max: round(sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1], 3),
        mean: round(mean, 3)
      },
      autocannonLatencyMs: { p50: result.latency.p50, p99: result.latency.p99 },
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      mismatches: result.mismatches,
      statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, stat]) => [code, stat.count])),
      memory: report
    }
    return measurement
  } finally {
    if (report === undefined) memory.stop()
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The run

const gitCommit = () => {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: repoRoot, encoding: "utf8" }).trim()
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], {
      cwd: repoRoot,
      encoding: "utf8"
    })
    return dirty.trim() === "" ? head : `${head}+dirty`
  } catch {
    return null
  }
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
  tempDir = await Fs.promises.mkdtemp(Path.join(Os.tmpdir(), "hostplane-bench-"))
  // As root the embedded PostgreSQL runs as the `postgres` user, which must be able to reach <temp>/hostplane/pg/data.
  await Fs.promises.chmod(tempDir, 0o755)
  const dataDir = Path.join(tempDir, "hostplane")

  // 1. The real server, on a fresh data dir and a free port.
  const hostplanePort = await freePort()
  const hostplaneEnv: NodeJS.ProcessEnv = {
    ...process.env,
    SERVICE_LISTEN: `127.0.0.1:${hostplanePort}`,
    SERVICE_DATA_DIR: dataDir
  }
  delete hostplaneEnv.DATABASE_URL // always the embedded PostgreSQL (and so the dev login)
  const base = `http://127.0.0.1:${hostplanePort}`
  log(`hostplane: starting on ${base} with embedded PostgreSQL under ${dataDir}`)
  const hostplane = startChild(
    "hostplane",
    ["--conditions=@hostplane/source", serverEntry],
    hostplaneEnv,
    Path.join(tempDir, "hostplane.log")
  )
  const login = JSON.stringify({ subject: "bench", name: "Bench" })
  const token = await waitFor(hostplane, 90_000, async () => {
    const reply = await request("POST", `${base}/v1/auth/dev/login`, { "content-type": "application/json" }, login)
    if (reply.status !== 200)
      throw new Error(`dev login answered ${reply.status}: ${reply.body.toString("utf8").slice(0, 200)}`)
    const { token } = JSON.parse(reply.body.toString("utf8")) as { token?: unknown }
    if (typeof token !== "string" || token === "") throw new Error("dev login answered without a token")
    return token
  })
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

  // 3. + 4. One after the other, never at the same time; the same request (bearer header included) to both.
  const expectBody = stableBody ? me.body.toString("utf8") : undefined
  const bareResult = await measure(
    { name: "bare", url: `${bareBase}/v1/me`, child: bare, withChildren: false },
    headers,
    expectBody
  )
  const hostplaneResult = await measure(
    { name: "hostplane", url: `${base}/v1/me`, child: hostplane, withChildren: true },
    headers,
    expectBody
  )

  // 5. Table and JSON.
  const ratio = (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? round(a / b, 3) : null)
  const ratios = {
    requestsPerSecond: ratio(hostplaneResult.requestsPerSecond, bareResult.requestsPerSecond),
    p99: ratio(hostplaneResult.latencyMs.p99, bareResult.latencyMs.p99)
  }
  const report = {
    benchmark: "GET /v1/me: hostplane vs bare node:http",
    date: new Date().toISOString(),
    commit: gitCommit(),
    node: process.version,
    platform: `${Os.platform()} ${Os.release()} ${Os.arch()}`,
    cpus: Os.cpus().length,
    cpuModel: Os.cpus()[0]?.model ?? null,
    loadAverage: { atStart: loadAtStart, atEnd: Os.loadavg().map((value) => round(value, 2)) },
    options: { durationS, warmupS, connections, pipelining: 1 },
    bodyBytes: me.body.length,
    bodyCheckedUnderLoad: stableBody,
    results: { hostplane: hostplaneResult, bare: bareResult },
    ratios
  }
  printTable(hostplaneResult, bareResult, ratios, me.body.length)

  const stamp = report.date.replace(/[:.]/g, "-")
  const resultsDir = save ? Path.join(benchDir, "results") : Path.join(Os.tmpdir(), "hostplane-bench-results")
  await Fs.promises.mkdir(resultsDir, { recursive: true })
  const resultsFile = Path.join(resultsDir, `me-${stamp}.json`)
  await Fs.promises.writeFile(resultsFile, `${JSON.stringify(report, null, 2)}\n`)
  console.log(`\nJSON: ${resultsFile}`)
  const failures = [hostplaneResult, bareResult].filter((m) => m.non2xx + m.errors + m.timeouts + m.mismatches > 0)
  for (const m of failures) {
    console.log(
      `warning: ${m.name} had ${m.non2xx} non-2xx, ${m.errors} errors, ${m.timeouts} timeouts, ${m.mismatches} body mismatches (status codes ${JSON.stringify(m.statusCodes)})`
    )
  }
}

const printTable = (
  hostplane: Measurement,
  bare: Measurement,
  ratios: { readonly requestsPerSecond: number | null; readonly p99: number | null },
  bodyBytes: number
) => {
  const fixed = (value: number | null, digits: number) =>
    value === null || !Number.isFinite(value) ? "n/a" : value.toFixed(digits)
  const header = ["", "req/s", "p50 ms", "p99 ms", "non-2xx", "errors", "peak RSS MiB"]
  const row = (m: Measurement) => [
    m.name,
    fixed(m.requestsPerSecond, 0),
    fixed(m.latencyMs.p50, 2),
    fixed(m.latencyMs.p99, 2),
    String(m.non2xx),
    String(m.errors + m.timeouts + m.mismatches),
    fixed(m.memory.peakRssMiB, 1)
  ]
  const rows = [
    header,
    row(hostplane),
    row(bare),
    ["hostplane/bare", `${fixed(ratios.requestsPerSecond, 3)}x`, "", `${fixed(ratios.p99, 2)}x`, "", "", ""]
  ]
  const widths = header.map((_, column) => Math.max(...rows.map((r) => r[column].length)))
  const line = (r: Array<string>) =>
    r
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column])))
      .join("  ")
      .trimEnd()
  console.log(
    `\nGET /v1/me, ${bodyBytes}-byte JSON body, ${connections} connections, ${durationS} s each (after ${warmupS} s warm-up), one server at a time`
  )
  console.log(line(rows[0]))
  console.log(line(rows[1]))
  console.log(line(rows[2]))
  console.log("-".repeat(line(rows[0]).length))
  console.log(line(rows[3]))
  if (hostplane.memory.childrenPeakPssMiB !== null) {
    console.log(
      `(hostplane's embedded PostgreSQL, not in its RSS above: peak ${fixed(hostplane.memory.childrenPeakPssMiB, 1)} MiB PSS)`
    )
  }
}

// 6. Whatever happens: a time bound, then the children stopped and the temp dir removed.
const timer = setTimeout(
  () => abort.reject(new Error(`gave up: the ${timeoutS} s time bound (--timeout) ran out`)),
  timeoutS * 1000
)
let exitCode = 0
try {
  const run = main()
  run.catch(() => undefined)
  await Promise.race([run, abort.promise])
} catch (error) {
  exitCode = 1
  console.error(`\nbench failed: ${messageOf(error)}`)
} finally {
  finished = true
  clearTimeout(timer)
  currentLoad?.stop()
  log("stopping the servers and removing the temp dir")
  await cleanup()
}
process.exit(exitCode)
