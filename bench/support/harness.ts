// What every benchmark under bench/ needs around its measurement: options, a log, the real server started as a child
// process (embedded PostgreSQL in a temp dir), HTTP requests, RSS sampling, and one abort path that always stops the
// children and removes the temp dir, on success, failure, signal and time bound alike.
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { type ParseArgsOptionsConfig, parseArgs } from "node:util"

// ---------------------------------------------------------------------------------------------------------------
// Paths, options and small helpers

/** The bench/ folder. */
export const benchDir = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
/** The monorepo root: the children's working directory. */
export const repoRoot = Path.resolve(benchDir, "..")
const serverEntry = Path.join(repoRoot, "packages/server/src/bin/server.ts")
const startedAt = Date.now()

/** Parses strict `--name value` options plus `--help` (prints `usage`, exit 0); `fail` prints a message and `usage`, exit 2. */
export const parseOptions = <const T extends ParseArgsOptionsConfig>(usage: string, options: T) => {
  const fail = (message: string): never => {
    console.error(`${message}\n${usage}`)
    process.exit(2)
  }
  const config = {
    options: { ...options, help: { type: "boolean", short: "h", default: false } },
    strict: true,
    allowPositionals: false
  } as const
  let values: ReturnType<typeof parseArgs<typeof config>>["values"]
  try {
    values = parseArgs(config).values
  } catch (error) {
    return fail(messageOf(error))
  }
  if ("help" in values && values.help === true) {
    console.log(usage)
    process.exit(0)
  }
  return { values, fail }
}

/** A progress line on stderr, stamped with the seconds since the bench started. */
export const log = (message: string) =>
  console.error(`[bench ${((Date.now() - startedAt) / 1000).toFixed(1).padStart(5)}s] ${message}`)

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** The message of anything thrown. */
export const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** `value` rounded to `digits` decimals. */
export const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits

/** The last `lines` lines of a child's log file, indented, for failure messages. */
export const tail = (file: string, lines = 30): string => {
  try {
    return Fs.readFileSync(file, "utf8")
      .trimEnd()
      .split("\n")
      .slice(-lines)
      .map((line) => `    | ${line.slice(0, 400)}`)
      .join("\n")
  } catch {
    return "    | (no log)"
  }
}

/** A port the kernel reports free on 127.0.0.1 right now. */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => (port > 0 ? resolve(port) : reject(new Error("no free port"))))
    })
  })

// ---------------------------------------------------------------------------------------------------------------
// HTTP

export interface Reply {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: Buffer
}

/**
 * One request on a fresh connection (`agent: false` → `Connection: close`), so no socket outlives it. A `file` body
 * streams from disk with its `Content-Length`, so the bench never holds a large body in memory either.
 */
export const request = (
  method: string,
  url: string,
  headers: Record<string, string> = {},
  body?: string | { readonly file: string; readonly bytes: number },
  timeoutMs = 5000
) =>
  new Promise<Reply>((resolve, reject) => {
    const all = { ...headers }
    if (body !== undefined)
      all["content-length"] = String(typeof body === "string" ? Buffer.byteLength(body) : body.bytes)
    const req = Http.request(url, { method, headers: all, agent: false, timeout: timeoutMs }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("error", reject)
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
    })
    req.on("timeout", () => req.destroy(new Error(`${method} ${url}: no answer within ${timeoutMs / 1000} s`)))
    req.on("error", reject)
    if (body === undefined || typeof body === "string") req.end(body)
    else Fs.createReadStream(body.file, { highWaterMark: 256 * 1024 }).pipe(req)
  })

// ---------------------------------------------------------------------------------------------------------------
// Abort: the time bound, signals and unexpected child exits all reject this one promise

const abort = Promise.withResolvers<never>()
abort.promise.catch(() => undefined)

// ---------------------------------------------------------------------------------------------------------------
// Children: each in its own process group (detached), so the whole tree (the server's PostgreSQL too) can be killed

export interface Child {
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

/** Creates the run's temp dir (removed by the cleanup) and returns its path. */
export const makeTempDir = async (prefix: string) => {
  const dir = await Fs.promises.mkdtemp(Path.join(Os.tmpdir(), prefix))
  tempDir = dir
  // As root the embedded PostgreSQL runs as the `postgres` user, which must be able to reach <temp>/hostplane/pg/data.
  await Fs.promises.chmod(dir, 0o755)
  return dir
}

/**
 * Spawns `file args` in its own process group, output to `logFile`; an exit not asked for by the cleanup aborts the
 * run, and the cleanup stops it with the servers.
 */
export const startProcess = (
  name: string,
  file: string,
  args: Array<string>,
  env: NodeJS.ProcessEnv,
  logFile: string,
  cwd: string = repoRoot
): Child => {
  const fd = Fs.openSync(logFile, "a")
  let proc: ChildProcess
  try {
    // Output goes to a file, not a pipe: nothing in this process has to drain it while it generates load.
    proc = spawn(file, args, { cwd, env, stdio: ["ignore", fd, fd], detached: true })
  } finally {
    Fs.closeSync(fd)
  }
  if (proc.pid === undefined) throw new Error(`${name}: could not spawn ${file}`)
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

/** Spawns `node args` as `startProcess` does. */
export const startChild = (name: string, args: Array<string>, env: NodeJS.ProcessEnv, logFile: string): Child =>
  startProcess(name, process.execPath, args, env, logFile)

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

/** Retries `attempt` every 200 ms until it yields a value; fails with the child's log tail after `ms`. */
export const waitFor = async <A>(child: Child, ms: number, attempt: () => Promise<A | undefined>): Promise<A> => {
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
// The real server

export interface Hostplane {
  readonly child: Child
  /** `http://127.0.0.1:<port>` */
  readonly base: string
  /** A session token of the dev user `bench`. */
  readonly token: string
  /** Where git over SSH listens (a free loopback port). */
  readonly sshPort: number
}

/**
 * Starts the real server on a free port with `SERVICE_DATA_DIR=<dir>/hostplane` and no `DATABASE_URL` (so an embedded
 * PostgreSQL and the dev login), waits until it answers, and signs in as `bench` with the dev login.
 */
export const startHostplane = async (
  dir: string,
  extraEnv: NodeJS.ProcessEnv = {},
  // Another checkout's server (with its own node_modules), for an A/B run against a baseline tree: its npm start runs.
  entry: string = serverEntry
): Promise<Hostplane> => {
  const dataDir = Path.join(dir, "hostplane")
  const port = await freePort()
  const sshPort = await freePort()
  // Every listener on a free port: the defaults (8080, the edge's 8081, git's 2222, DNS's 5353) may be taken here.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SERVICE_LISTEN: `127.0.0.1:${port}`,
    SERVICE_EDGE_LISTEN: `127.0.0.1:${await freePort()}`,
    SERVICE_GIT_SSH_LISTEN: `127.0.0.1:${sshPort}`,
    SERVICE_DNS_LISTEN: `127.0.0.1:${await freePort()}`,
    SERVICE_DATA_DIR: dataDir,
    ...extraEnv
  }
  delete env.DATABASE_URL // always the embedded PostgreSQL (and so the dev login)
  const base = `http://127.0.0.1:${port}`
  log(`hostplane: starting on ${base} with embedded PostgreSQL under ${dataDir}`)
  // The checkout's own `npm start` line (its flags, its bundle or its sources), run as npm runs it: through `sh -c` in
  // the checkout's root with its node_modules/.bin first on the PATH. The line `exec`s node, so the child's pid is the
  // server's. BENCH_SERVER_NODE_ARGS: extra node flags for the server only (`--cpu-prof --cpu-prof-dir=/tmp/prof`,
  // which NODE_OPTIONS refuses); the profile is written when the server exits on the cleanup's SIGTERM.
  const root = Path.resolve(Path.dirname(entry), "../../../..")
  const { scripts } = JSON.parse(Fs.readFileSync(Path.join(root, "package.json"), "utf8")) as {
    scripts: { start: string }
  }
  const child = startProcess(
    "hostplane",
    "/bin/sh",
    ["-c", scripts.start.replace(/\bnode /, `node ${process.env.BENCH_SERVER_NODE_ARGS ?? ""} `)],
    { ...env, PATH: `${Path.join(root, "node_modules", ".bin")}:${env.PATH ?? "/usr/bin:/bin"}` },
    Path.join(dir, "hostplane.log"),
    root
  )
  const login = JSON.stringify({ subject: "bench", name: "Bench" })
  // 180 s: at a load average of 10-13 on 2 cores the embedded PostgreSQL's first start (initdb, migrations) took over
  // 90 s twice in one afternoon, and the bench failed before measuring anything.
  const token = await waitFor(child, 180_000, async () => {
    const reply = await request("POST", `${base}/v1/auth/dev/login`, { "content-type": "application/json" }, login)
    if (reply.status !== 200)
      throw new Error(`dev login answered ${reply.status}: ${reply.body.toString("utf8").slice(0, 200)}`)
    const { token } = JSON.parse(reply.body.toString("utf8")) as { token?: unknown }
    if (typeof token !== "string" || token === "") throw new Error("dev login answered without a token")
    return token
  })
  return { child, base, token, sshPort }
}

// ---------------------------------------------------------------------------------------------------------------
// Memory

/** Whether /proc is there (Linux); elsewhere RSS comes from `ps`. */
export const hasProc = Fs.existsSync("/proc/self/status")

/** A `<field>: <n> kB` line of /proc/<pid>/status (VmRSS, VmHWM...), in KiB. */
export const statusKiB = (pid: number, field: string): number | undefined => {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(Fs.readFileSync(`/proc/${pid}/status`, "utf8"))
    return match === null ? undefined : Number(match[1])
  } catch {
    return undefined
  }
}

/** The resident set of one process now, in KiB: VmRSS from /proc, or `ps -o rss` without it. */
export const rssKiB = (pid: number): number | undefined => {
  if (hasProc) return statusKiB(pid, "VmRSS")
  try {
    const value = Number(execFileSync("ps", ["-o", "rss=", "-p", String(pid)], { encoding: "utf8" }).trim())
    return Number.isFinite(value) && value > 0 ? value : undefined
  } catch {
    return undefined
  }
}

const clockTicks = (() => {
  try {
    return hasProc ? Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100 : 100
  } catch {
    return 100
  }
})()

/** User + system seconds (`own`) and its waited-for children's (`children`) from a `stat` file; undefined once gone. */
const statCpu = (file: string): { own: number; children: number } | undefined => {
  try {
    const stat = Fs.readFileSync(file, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return {
      own: (Number(fields[11]) + Number(fields[12])) / clockTicks,
      children: (Number(fields[13]) + Number(fields[14])) / clockTicks
    }
  } catch {
    return undefined
  }
}

/**
 * CPU seconds (user + system, every thread) a process has used so far (`own`), and those of the children it has
 * waited for and theirs (`children`), from /proc/<pid>/stat; undefined off Linux or once it is gone.
 */
export const processCpu = (pid: number | "self"): { own: number; children: number } | undefined =>
  hasProc ? statCpu(`/proc/${pid}/stat`) : undefined

/**
 * `processCpu` of a server, with its spawning helper's CPU (a live child started by SmallSpawn.ts, which runs the
 * server's git) counted among its children's: the helper's own and that of the children it has waited for.
 */
export const serverProcessCpu = (pid: number): { own: number; children: number } | undefined => {
  const cpu = processCpu(pid)
  if (cpu === undefined) return undefined
  let children = cpu.children
  for (const child of liveChildren(pid)) {
    const command = (() => {
      try {
        return Fs.readFileSync(`/proc/${child}/cmdline`, "utf8")
      } catch {
        return ""
      }
    })()
    if (!command.endsWith("\0hostplane-small-spawn\0")) continue
    const helper = processCpu(child)
    if (helper !== undefined) children += helper.own + helper.children
  }
  return { own: cpu.own, children }
}

/** The process ids of `pid`'s running children (every thread's), from /proc. */
const liveChildren = (pid: number): Array<number> => {
  if (!hasProc) return []
  try {
    return Fs.readdirSync(`/proc/${pid}/task`).flatMap((task) =>
      Fs.readFileSync(`/proc/${pid}/task/${task}/children`, "utf8")
        .split(" ")
        .filter((word) => word !== "")
        .map(Number)
    )
  } catch {
    return []
  }
}

/**
 * CPU seconds (user + system) of each thread of `pid` so far, from /proc/<pid>/task: the main thread as `main`, all
 * others summed as `other` (V8's collector helpers, the thread pool); zeros off Linux.
 */
export const threadCpu = (pid: number) => {
  let main = 0
  let other = 0
  if (!hasProc) return { main, other }
  for (const task of Fs.readdirSync(`/proc/${pid}/task`)) {
    // A thread that ended meanwhile counts nothing.
    const seconds = statCpu(`/proc/${pid}/task/${task}/stat`)?.own ?? 0
    if (task === String(pid)) main += seconds
    else other += seconds
  }
  return { main, other }
}

/**
 * CPU seconds one process has used so far (`processCpu`). Unlike wall time it hardly moves with the load of other
 * processes on the machine. With `reaped`, also the CPU of the children it has waited for (a PostgreSQL postmaster's
 * exited backends).
 */
export const cpuSeconds = (pid: number, reaped = false): number | undefined => {
  const cpu = processCpu(pid)
  return cpu === undefined ? undefined : reaped ? cpu.own + cpu.children : cpu.own
}

/** Reads `read` now, every `everyMs` and once more at `stop`, which returns the highest value and how many were read. */
export const samplePeak = (read: () => number | undefined, everyMs: number) => {
  let peak: number | undefined
  let samples = 0
  const sample = () => {
    const value = read()
    if (value === undefined) return
    samples++
    peak = Math.max(peak ?? 0, value)
  }
  sample()
  const timer = setInterval(sample, everyMs)
  return {
    stop: () => {
      clearInterval(timer)
      sample()
      return { peak, samples }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The run

/**
 * Runs `main` against the time bound, SIGINT/SIGTERM/SIGHUP and unexpected child exits; then, whatever happened,
 * `onEnd` (stop the load), the children stopped and the temp dir removed, and the process exits (0 for a full run).
 */
export const runBench = async (main: () => Promise<void>, timeoutS: number, onEnd?: () => void): Promise<never> => {
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
    clearTimeout(timer)
    onEnd?.()
    log(`stopping the ${children.length > 1 ? "servers" : "server"} and removing the temp dir`)
    await cleanup()
  }
  process.exit(exitCode)
}
