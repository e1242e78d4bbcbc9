// `npm run bench:upload -- [--sizes <MiB,...>] [--timeout <s>] [--save]`
//
// Uploads generated bundles (many files, mixed compressible and incompressible) of each size to the real hostplane
// server (embedded PostgreSQL, fresh data dir) and prints MB/s and the server's peak RSS beside the baseline
// `tar -xzf` of the same file. Flat memory shows as the same peak RSS for a 10 MiB and a 95 MiB bundle. See README.md.
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { createGzip } from "node:zlib"
import * as TarStream from "tar-stream"

// ---------------------------------------------------------------------------------------------------------------
// Options

const usage = `usage: npm run bench:upload -- [options]
  --sizes <MiB,...>   compressed bundle sizes to upload, one after the other (default 10,95; the limit is 100)
  --timeout <s>       abort everything after this many seconds (default 600)
  --save              write the JSON result to bench/results/ instead of the system temp dir`

const parsed = (() => {
  try {
    return parseArgs({
      options: {
        sizes: { type: "string" },
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

const fail = (message: string): never => {
  console.error(`${message}\n${usage}`)
  process.exit(2)
}

const sizesMiB = (parsed.sizes ?? "10,95").split(",").map((raw) => {
  const value = Number(raw)
  return raw.trim() !== "" && Number.isFinite(value) && value >= 1 && value <= 99 ? value : fail(`invalid size ${raw}`)
})
const timeoutS = parsed.timeout === undefined ? 600 : Number(parsed.timeout)
if (!Number.isFinite(timeoutS) || timeoutS <= 0) fail(`invalid --timeout ${parsed.timeout}`)
const save = parsed.save === true

// ---------------------------------------------------------------------------------------------------------------
// Helpers

const benchDir = Path.dirname(fileURLToPath(import.meta.url))
const repoRoot = Path.resolve(benchDir, "..")
const serverEntry = Path.join(repoRoot, "packages/http/src/bin/server.ts")
const startedAt = Date.now()
const MiB = 1024 * 1024

const log = (message: string) =>
  console.error(`[bench ${((Date.now() - startedAt) / 1000).toFixed(1).padStart(5)}s] ${message}`)
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))
const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits

const tail = (file: string, lines = 30): string => {
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
  readonly body: string
}

/**
 * One request on a fresh connection; `file` streams from disk as the body (with its `Content-Length`), so the bench
 * itself never holds a bundle in memory either.
 */
const request = (
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: { readonly text: string } | { readonly file: string; readonly bytes: number },
  timeoutMs = 10_000
) =>
  new Promise<Reply>((resolve, reject) => {
    const all = { ...headers }
    if (body !== undefined) all["content-length"] = String("text" in body ? Buffer.byteLength(body.text) : body.bytes)
    const req = Http.request(url, { method, headers: all, agent: false, timeout: timeoutMs }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("error", reject)
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }))
    })
    req.on("timeout", () => req.destroy(new Error(`${method} ${url}: no answer within ${timeoutMs / 1000} s`)))
    req.on("error", reject)
    if (body === undefined) req.end()
    else if ("text" in body) req.end(body.text)
    else Fs.createReadStream(body.file, { highWaterMark: 256 * 1024 }).pipe(req)
  })

const json = (reply: Reply, what: string, status: number) => {
  if (reply.status !== status) throw new Error(`${what} answered ${reply.status}: ${reply.body.slice(0, 400)}`)
  return JSON.parse(reply.body) as Record<string, unknown>
}

// ---------------------------------------------------------------------------------------------------------------
// Abort, children and cleanup (as in bench/me.ts: every child in its own process group)

const abort = Promise.withResolvers<never>()
abort.promise.catch(() => undefined)

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
      abort.reject(new Error(`${name} exited unexpectedly (${signal ?? `code ${code}`}); log:\n${tail(logFile)}`))
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
    // already gone
  }
}

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

process.on("exit", () => {
  for (const child of children) if (!child.exited) killGroup(child.pid, "SIGKILL")
  if (tempDir !== undefined) Fs.rmSync(tempDir, { recursive: true, force: true })
})
let signalled = 0
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    if (++signalled > 1) process.exit(130)
    abort.reject(new Error(`interrupted by ${signal}`))
  })
}

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
  throw new Error(`${child.name} not ready after ${ms / 1000} s (${last}); log:\n${tail(child.logFile)}`)
}

// ---------------------------------------------------------------------------------------------------------------
// Memory: VmRSS of one process, sampled every 20 ms (Linux /proc; `ps` every 200 ms elsewhere)

const hasProc = Fs.existsSync("/proc/self/status")

const rssKiB = (pid: number): number | undefined => {
  try {
    if (hasProc) {
      const match = /^VmRSS:\s+(\d+) kB/m.exec(Fs.readFileSync(`/proc/${pid}/status`, "utf8"))
      return match === null ? undefined : Number(match[1])
    }
    const value = Number(execFileSync("ps", ["-o", "rss=", "-p", String(pid)], { encoding: "utf8" }).trim())
    return Number.isFinite(value) && value > 0 ? value : undefined
  } catch {
    return undefined
  }
}

const sampleRss = (pid: number) => {
  let peak = rssKiB(pid) ?? 0
  const timer = setInterval(() => (peak = Math.max(peak, rssKiB(pid) ?? 0)), hasProc ? 20 : 200)
  return {
    stop: () => {
      clearInterval(timer)
      peak = Math.max(peak, rssKiB(pid) ?? 0)
      return round(peak / 1024, 1)
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Bundles: service.json, a worker, and assets until the gzipped tar reaches the target size. Assets alternate
// between incompressible bytes (images, fonts) and text of random words (about 3:1 under gzip), 1 to 257 KiB each (most small).

const words = Array.from({ length: 2048 }, () => randomBytes(2 + Math.floor(Math.random() * 8)).toString("base64url"))

const textOf = (bytes: number): Buffer => {
  const parts: Array<string> = []
  let length = 0
  while (length < bytes) {
    const word = words[Math.floor(Math.random() * words.length)]
    parts.push(word)
    length += word.length + 1
  }
  return Buffer.from(parts.join(" ")).subarray(0, bytes)
}

interface BuiltBundle {
  readonly file: string
  readonly bytes: number
  readonly files: number
  readonly uncompressedBytes: number
}

const buildBundle = (file: string, targetBytes: number) =>
  new Promise<BuiltBundle>((resolve, reject) => {
    const pack = TarStream.pack()
    const gzip = createGzip({ level: 6 })
    const out = Fs.createWriteStream(file)
    let written = 0
    let files = 0
    let uncompressedBytes = 0
    gzip.on("data", (chunk: Buffer) => (written += chunk.length))
    pack.pipe(gzip).pipe(out)
    pack.on("error", reject)
    gzip.on("error", reject)
    out.on("error", reject)
    out.on("finish", () => resolve({ file, bytes: written, files, uncompressedBytes }))
    const add = (name: string, content: Buffer) =>
      new Promise<void>((done, failed) => {
        files++
        uncompressedBytes += content.length
        pack.entry({ name, mtime: new Date(0) }, content, (error) => (error ? failed(error) : done()))
      })
    void (async () => {
      await add("service.json", Buffer.from(JSON.stringify({ name: "bench", main: "worker/index.js" })))
      await add("worker/index.js", Buffer.from("export default { fetch: () => new Response('bench') }\n"))
      // Stop a little short: gzip still holds buffered output, and the tar end adds a few bytes.
      while (written < targetBytes - 256 * 1024) {
        const size = 1024 + Math.floor(Math.random() ** 4 * 256 * 1024)
        const dir = `assets/d${files % 50}`
        const incompressible = files % 2 === 0
        // The entry's callback waits for the pack to drain into gzip: the build holds one file at a time.
        await add(
          `${dir}/f${files}.${incompressible ? "bin" : "txt"}`,
          incompressible ? randomBytes(size) : textOf(size)
        )
      }
      pack.finalize()
    })().catch(reject)
  })

// ---------------------------------------------------------------------------------------------------------------
// The baseline: `tar -xzf` of the same file into a fresh folder

interface Extraction {
  readonly seconds: number
  readonly peakRssMiB: number | null
  readonly rssSource: string
}

const hasGnuTime = Fs.existsSync("/usr/bin/time")

const extract = (file: string, into: string) =>
  new Promise<Extraction>((resolve, reject) => {
    Fs.mkdirSync(into, { recursive: true })
    const args = ["-xzf", file, "-C", into]
    const started = performance.now()
    // GNU time's maximum RSS is that of tar or of its gzip child, whichever is larger (getrusage of the children).
    const proc = hasGnuTime
      ? spawn("/usr/bin/time", ["-v", "tar", ...args], { stdio: ["ignore", "ignore", "pipe"] })
      : spawn("tar", args, { stdio: ["ignore", "ignore", "pipe"] })
    const sampler = !hasGnuTime && proc.pid !== undefined ? sampleRss(proc.pid) : undefined
    let stderr = ""
    proc.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    proc.on("error", reject)
    proc.on("exit", (code) => {
      const seconds = (performance.now() - started) / 1000
      const sampled = sampler?.stop()
      if (code !== 0) return reject(new Error(`tar -xzf exited with ${code}: ${stderr.slice(-400)}`))
      const match = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr)
      resolve({
        seconds,
        peakRssMiB: match !== null ? round(Number(match[1]) / 1024, 1) : (sampled ?? null),
        rssSource: match !== null ? "/usr/bin/time -v" : "VmRSS sampled every 20 ms"
      })
    })
  })

// ---------------------------------------------------------------------------------------------------------------
// The run

interface Row {
  readonly sizeMiB: number
  readonly bytes: number
  readonly files: number
  readonly uncompressedBytes: number
  readonly hostplane: {
    readonly seconds: number
    readonly mbPerSecond: number
    readonly idleRssMiB: number
    readonly peakRssMiB: number
    readonly deployment: Record<string, unknown>
  }
  readonly tar: Extraction & { readonly mbPerSecond: number }
}

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

const main = async () => {
  log(
    `node ${process.version}, ${Os.cpus().length} CPUs; bundles of ${sizesMiB.join(", ")} MiB; time bound ${timeoutS} s`
  )
  tempDir = await Fs.promises.mkdtemp(Path.join(Os.tmpdir(), "hostplane-bench-upload-"))
  await Fs.promises.chmod(tempDir, 0o755)
  const dataDir = Path.join(tempDir, "hostplane")

  // 1. The bundles, on disk: built before the server starts, so building competes with nothing.
  const bundles: Array<BuiltBundle & { readonly sizeMiB: number }> = []
  for (const sizeMiB of [1, ...sizesMiB]) {
    const built = await buildBundle(Path.join(tempDir, `bundle-${sizeMiB}.tar.gz`), sizeMiB * MiB)
    log(
      `bundle ${sizeMiB} MiB: ${round(built.bytes / MiB, 1)} MiB gzipped, ${built.files} files, ${round(built.uncompressedBytes / MiB, 1)} MiB of content`
    )
    bundles.push({ ...built, sizeMiB })
  }

  // 2. The real server, on a fresh data dir and a free port.
  const port = await freePort()
  const env: NodeJS.ProcessEnv = { ...process.env, SERVICE_LISTEN: `127.0.0.1:${port}`, SERVICE_DATA_DIR: dataDir }
  delete env.DATABASE_URL
  const base = `http://127.0.0.1:${port}`
  log(`hostplane: starting on ${base} with embedded PostgreSQL under ${dataDir}`)
  const server = startChild(
    "hostplane",
    ["--conditions=@hostplane/source", serverEntry],
    env,
    Path.join(tempDir, "hostplane.log")
  )
  const jsonHeaders = { "content-type": "application/json" }
  const token = await waitFor(server, 90_000, async () => {
    const reply = await request("POST", `${base}/v1/auth/dev/login`, jsonHeaders, { text: '{"subject":"bench"}' })
    const body = json(reply, "dev login", 200)
    return typeof body.token === "string" ? body.token : undefined
  })
  const auth = { authorization: `Bearer ${token}` }
  json(
    await request(
      "POST",
      `${base}/v1/orgs`,
      { ...jsonHeaders, ...auth },
      { text: '{"name":"Bench uploads","slug":"bench-uploads"}' }
    ),
    "org create",
    201
  )
  json(
    await request(
      "POST",
      `${base}/v1/orgs/bench-uploads/projects`,
      { ...jsonHeaders, ...auth },
      { text: '{"name":"site"}' }
    ),
    "project create",
    201
  )
  const uploadUrl = `${base}/v1/orgs/bench-uploads/projects/site/deployments`
  log("hostplane: ready, org bench-uploads, project site")

  // 3. Each bundle: the upload, then (server idle) the baseline extraction of the same file.
  const rows: Array<Row> = []
  for (const built of bundles) {
    await sleep(1500) // let the server settle (and collect) before its idle RSS is read
    const idleRssMiB = round((rssKiB(server.pid) ?? 0) / 1024, 1)
    const sampler = sampleRss(server.pid)
    const started = performance.now()
    let reply: Reply
    let peakRssMiB: number
    try {
      reply = await request(
        "POST",
        uploadUrl,
        { ...auth, "content-type": "application/gzip", "x-service-git-message": encodeURIComponent("bench upload") },
        { file: built.file, bytes: built.bytes },
        300_000
      )
    } finally {
      peakRssMiB = sampler.stop()
    }
    const seconds = (performance.now() - started) / 1000
    const deployment = json(reply, `upload of ${built.sizeMiB} MiB`, 201)
    if (deployment.bytes !== built.bytes) throw new Error(`the server counted ${deployment.bytes} bytes`)
    const tar = await extract(built.file, Path.join(tempDir, `extract-${built.sizeMiB}`))
    await Fs.promises.rm(Path.join(tempDir, `extract-${built.sizeMiB}`), { recursive: true, force: true })
    const mbPerSecond = (s: number) => round(built.bytes / 1e6 / s, 1)
    log(
      `${built.sizeMiB} MiB: hostplane ${round(seconds, 2)} s (${mbPerSecond(seconds)} MB/s, peak RSS ${peakRssMiB} MiB), tar -xzf ${round(tar.seconds, 2)} s`
    )
    if (built.sizeMiB === 1) continue // warm-up: JIT, pools, first artifact folders
    rows.push({
      sizeMiB: built.sizeMiB,
      bytes: built.bytes,
      files: built.files,
      uncompressedBytes: built.uncompressedBytes,
      hostplane: { seconds: round(seconds, 3), mbPerSecond: mbPerSecond(seconds), idleRssMiB, peakRssMiB, deployment },
      tar: { ...tar, seconds: round(tar.seconds, 3), mbPerSecond: mbPerSecond(tar.seconds) }
    })
  }

  // 4. Table and JSON.
  printTable(rows)
  const report = {
    benchmark: "bundle upload: hostplane vs tar -xzf",
    date: new Date().toISOString(),
    commit: gitCommit(),
    node: process.version,
    platform: `${Os.platform()} ${Os.release()} ${Os.arch()}`,
    cpus: Os.cpus().length,
    cpuModel: Os.cpus()[0]?.model ?? null,
    loadAverage: Os.loadavg().map((value) => round(value, 2)),
    rows
  }
  const resultsDir = save ? Path.join(benchDir, "results") : Path.join(Os.tmpdir(), "hostplane-bench-results")
  await Fs.promises.mkdir(resultsDir, { recursive: true })
  const resultsFile = Path.join(resultsDir, `upload-${report.date.replace(/[:.]/g, "-")}.json`)
  await Fs.promises.writeFile(resultsFile, `${JSON.stringify(report, null, 2)}\n`)
  console.log(`\nJSON: ${resultsFile}`)
}

const printTable = (rows: ReadonlyArray<Row>) => {
  const header = [
    "bundle",
    "files",
    "content MiB",
    "hostplane s",
    "MB/s",
    "idle RSS",
    "peak RSS",
    "tar -xzf s",
    "MB/s",
    "peak RSS",
    "hostplane/tar MB/s"
  ]
  const body = rows.map((row) => [
    `${round(row.bytes / MiB, 1)} MiB`,
    String(row.files),
    String(round(row.uncompressedBytes / MiB, 1)),
    row.hostplane.seconds.toFixed(2),
    row.hostplane.mbPerSecond.toFixed(1),
    row.hostplane.idleRssMiB.toFixed(1),
    row.hostplane.peakRssMiB.toFixed(1),
    row.tar.seconds.toFixed(2),
    row.tar.mbPerSecond.toFixed(1),
    row.tar.peakRssMiB === null ? "n/a" : row.tar.peakRssMiB.toFixed(1),
    `${(row.hostplane.mbPerSecond / row.tar.mbPerSecond).toFixed(2)}x`
  ])
  const all = [header, ...body]
  const widths = header.map((_, column) => Math.max(...all.map((r) => r[column].length)))
  const line = (r: Array<string>) =>
    r.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join("  ")
  console.log(
    "\nUpload of a gzipped tar bundle (MB/s = compressed 10^6 bytes per second; RSS in MiB, server process only)"
  )
  console.log(line(all[0]))
  console.log("-".repeat(line(all[0]).length))
  for (const row of body) console.log(line(row))
  if (rows.length > 0) console.log(`(tar peak RSS: ${rows[0].tar.rssSource})`)
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
  log("stopping the server and removing the temp dir")
  await cleanup()
}
process.exit(exitCode)
