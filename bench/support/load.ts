// HTTP load for the request benchmarks (bench/me.ts, bench/write.ts): autocannon runs in the bench process, one
// server at a time, with fractional-millisecond latencies and the server's memory sampled during the load.
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import autocannon from "autocannon"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { type Child, cpuSeconds, hasProc, log, round, rssKiB, samplePeak, statusKiB } from "./harness.ts"

/** The URL of the embedded PostgreSQL the server started under `dataDir` (its password file, its postmaster.pid). */
export const embeddedDatabaseUrl = (dataDir: string) => {
  const password = Fs.readFileSync(Path.join(dataDir, "pg", "password"), "utf8").trim()
  const port = Number(Fs.readFileSync(Path.join(dataDir, "pg", "data", "postmaster.pid"), "utf8").split("\n")[3])
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`
}

// ---------------------------------------------------------------------------------------------------------------
// Memory: peak VmRSS of the server process under load (and, for hostplane, the PSS of its PostgreSQL tree)

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

// ---------------------------------------------------------------------------------------------------------------
// CPU: what each request costs the server and PostgreSQL, whatever the machine's load does to the rate

/** CPU seconds of every process under `root` (not `root` itself), reaped children included. */
const treeCpuSeconds = (root: number): number =>
  descendants(root).reduce((sum, pid) => sum + (cpuSeconds(pid, true) ?? 0), 0)

export interface CpuReport {
  /** The server process's CPU per answered request during the measured load, in microseconds. */
  readonly serverUsPerRequest: number | null
  /** The database's (every process under `Target.database`) CPU per answered request, in microseconds. */
  readonly databaseUsPerRequest: number | null
  /**
   * The load generator's (this process: autocannon, with the memory sampling) CPU per answered request, in
   * microseconds: it shares the machine's cores with the server, so a client that needs most of one caps the rate.
   */
  readonly clientUsPerRequest: number | null
}

const startCpu = (target: Target) => {
  const server = cpuSeconds(target.child.pid)
  const database = target.database === undefined || !hasProc ? undefined : treeCpuSeconds(target.database)
  const client = process.cpuUsage()
  return (requests: number): CpuReport => {
    const perRequest = (before: number | undefined, after: number | undefined) =>
      before === undefined || after === undefined || requests === 0
        ? null
        : round(((after - before) * 1e6) / requests, 0)
    return {
      serverUsPerRequest: perRequest(server, cpuSeconds(target.child.pid)),
      databaseUsPerRequest:
        target.database === undefined ? null : perRequest(database, treeCpuSeconds(target.database)),
      clientUsPerRequest: perRequest(0, Object.values(process.cpuUsage(client)).reduce((sum, us) => sum + us, 0) / 1e6)
    }
  }
}

export interface MemoryReport {
  /** Highest VmRSS seen while sampling (every 100 ms; `ps` every 500 ms off Linux). */
  readonly peakRssMiB: number | null
  /** VmHWM at the end: the process' lifetime peak, start-up included (Linux only). */
  readonly lifetimePeakRssMiB: number | null
  /** Highest summed PSS of the server's child processes (hostplane: its embedded PostgreSQL), every 1 s (Linux). */
  readonly childrenPeakPssMiB: number | null
  readonly samples: number
}

const sampleMemory = (pid: number, withChildren: boolean) => {
  const rss = samplePeak(() => rssKiB(pid), hasProc ? 100 : 500)
  const childrenPss = withChildren && hasProc ? samplePeak(() => pssKiB(descendants(pid)), 1000) : undefined
  return {
    stop: (): MemoryReport => {
      const { peak, samples } = rss.stop()
      const childrenPeak = childrenPss?.stop().peak
      const hwm = hasProc ? statusKiB(pid, "VmHWM") : undefined
      const mib = (kib: number | undefined) => (kib === undefined || kib === 0 ? null : round(kib / 1024, 1))
      return {
        peakRssMiB: mib(peak),
        lifetimePeakRssMiB: mib(hwm),
        childrenPeakPssMiB: mib(childrenPeak),
        samples
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Load

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

/** Stops the load under way, if any, and refuses any later one: the bench's `runBench` end hook. */
export const stopLoad = () => {
  finished = true
  currentLoad?.stop()
}

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

export interface Target {
  readonly name: string
  readonly url: string
  readonly child: Child
  readonly withChildren: boolean
  /** The process whose descendants are the database this target uses (hostplane's: its embedded PostgreSQL). */
  readonly database?: number | undefined
}

export interface Measurement {
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
  readonly cpu: CpuReport
}

export interface LoadOptions {
  readonly connections: number
  readonly warmupS: number
  readonly durationS: number
  readonly method: string
  readonly headers: Record<string, string>
  readonly body?: string | undefined
  /** Checked against every response (`mismatches`) when the server answers the same bytes every time. */
  readonly expectBody?: string | undefined
}

/** Warm-up (unmeasured), then the measured load of one target, with its memory sampled throughout. */
export const measure = async (target: Target, load_: LoadOptions): Promise<Measurement> => {
  const { connections, warmupS, durationS, method, headers, body, expectBody } = load_
  const options = {
    url: target.url,
    method,
    headers,
    connections,
    pipelining: 1,
    timeout: 10,
    ...(body === undefined ? {} : { body }),
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
    const cpu = startCpu(target)
    const { result, latencies } = await load({ ...options, duration: durationS })
    const cpuReport = cpu(result.requests.total)
    report = memory.stop()
    const sorted = latencies.slice().sort()
    const mean = sorted.reduce((sum, value) => sum + value, 0) / Math.max(1, sorted.length)
    return {
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
      memory: report,
      cpu: cpuReport
    }
  } finally {
    if (report === undefined) memory.stop()
  }
}

/** The request-rate options every load bench takes, parsed and checked (`fail` exits with the usage). */
export const loadOptions = (
  parsed: {
    readonly duration?: string | undefined
    readonly connections?: string | undefined
    readonly warmup?: string | undefined
    readonly runs?: string | undefined
    readonly timeout?: string | undefined
  },
  fail: (message: string) => never
) => {
  const numberOption = (name: string, raw: string | undefined, fallback: number, check: (n: number) => boolean) => {
    if (raw === undefined) return fallback
    const value = Number(raw)
    if (raw.trim() === "" || !Number.isFinite(value) || !check(value)) fail(`invalid --${name} ${JSON.stringify(raw)}`)
    return value
  }
  const durationS = numberOption("duration", parsed.duration, 10, (n) => n >= 1 && n <= 3600)
  const connections = numberOption(
    "connections",
    parsed.connections,
    50,
    (n) => Number.isInteger(n) && n >= 1 && n <= 1000
  )
  const warmupS = numberOption("warmup", parsed.warmup, 3, (n) => n >= 0 && n <= 600)
  const runs = numberOption("runs", parsed.runs, 3, (n) => Number.isInteger(n) && n >= 1 && n <= 100)
  const timeoutS = numberOption(
    "timeout",
    parsed.timeout,
    Math.max(120, 90 + 4 * runs * (warmupS + durationS)),
    (n) => n > 0
  )
  return { durationS, connections, warmupS, runs, timeoutS }
}

/** The options of `loadOptions`, for `parseOptions`. */
export const loadOptionsConfig = {
  duration: { type: "string" },
  connections: { type: "string" },
  warmup: { type: "string" },
  runs: { type: "string" },
  timeout: { type: "string" },
  save: { type: "boolean", default: false }
} as const
