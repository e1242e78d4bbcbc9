// `npm run bench:upload -- [--sizes <MiB,...>] [--stores disk,s3] [--timeout <s>] [--save]`
//
// Uploads generated bundles (many files, mixed compressible and incompressible) of each size to the real hostplane
// server (embedded PostgreSQL, fresh data dir) and prints MB/s and the server's peak RSS beside the baseline
// `tar -xzf` of the same file. Flat memory shows as the same peak RSS for a 10 MiB and a 95 MiB bundle. See README.md.
// Each store in one run: artifacts on the local disk, then in an S3 bucket (s3rver, in this process, on loopback).
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
/// <reference path="../packages/testkit/src/s3/s3rver.d.ts" />
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import S3rver from "s3rver"
import {
  cpuSeconds,
  hasProc,
  log,
  makeTempDir,
  parseOptions,
  type Reply,
  request,
  round,
  rssKiB,
  runBench,
  samplePeak,
  sleep,
  startHostplane
} from "./support/harness.ts"
import { type BuiltBundle, buildBundle } from "./support/bundles.ts"
import { alignColumns, formatRatio, gitCommit, loadLine, machine, spread, writeReport } from "./support/report.ts"

// ---------------------------------------------------------------------------------------------------------------
// Options

const usage = `usage: npm run bench:upload -- [options]
  --sizes <MiB,...>   compressed bundle sizes to upload, one after the other (default 10,95; the limit is 100)
  --runs <n>          paired runs (upload, then tar -xzf) per size; the ratio is printed as min/median/max (default 3)
  --stores <list>     where the server keeps artifacts, one server each: disk, s3 (default disk,s3)
  --timeout <s>       abort everything after this many seconds (default 900)
  --save              write the JSON result to bench/results/ instead of the system temp dir`

const { values: parsed, fail } = parseOptions(usage, {
  sizes: { type: "string" },
  runs: { type: "string" },
  timeout: { type: "string" },
  stores: { type: "string" },
  save: { type: "boolean", default: false }
})

const sizesMiB = (parsed.sizes ?? "10,95").split(",").map((raw) => {
  const value = Number(raw)
  return raw.trim() !== "" && Number.isFinite(value) && value >= 1 && value <= 99 ? value : fail(`invalid size ${raw}`)
})
const runs = parsed.runs === undefined ? 3 : Number(parsed.runs)
if (!Number.isInteger(runs) || runs < 1) fail(`invalid --runs ${parsed.runs}`)
const timeoutS = parsed.timeout === undefined ? 900 : Number(parsed.timeout)
if (!Number.isFinite(timeoutS) || timeoutS <= 0) fail(`invalid --timeout ${parsed.timeout}`)
const save = parsed.save === true
const stores = (parsed.stores ?? "disk,s3").split(",").map((raw) => {
  const store = raw.trim()
  return store === "disk" || store === "s3" ? store : fail(`invalid store ${raw}`)
})

const MiB = 1024 * 1024

/** The reply's JSON body, when it has the expected status. */
const json = (reply: Reply, what: string, status: number) => {
  const body = reply.body.toString("utf8")
  if (reply.status !== status) throw new Error(`${what} answered ${reply.status}: ${body.slice(0, 400)}`)
  return JSON.parse(body) as Record<string, unknown>
}

// ---------------------------------------------------------------------------------------------------------------
// Memory: VmRSS of one process, sampled every 20 ms (Linux /proc; `ps` every 200 ms elsewhere)

const sampleRss = (pid: number) => {
  const sampler = samplePeak(() => rssKiB(pid), hasProc ? 20 : 200)
  return { stop: () => round((sampler.stop().peak ?? 0) / 1024, 1) }
}

// ---------------------------------------------------------------------------------------------------------------
// The baseline: `tar -xzf` of the same file into a fresh folder

interface Extraction {
  readonly seconds: number
  /** User + system CPU seconds of tar and its gzip child (GNU time), or null without /usr/bin/time. */
  readonly cpuSeconds: number | null
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
      const user = /User time \(seconds\): ([\d.]+)/.exec(stderr)
      const system = /System time \(seconds\): ([\d.]+)/.exec(stderr)
      resolve({
        seconds,
        cpuSeconds: user !== null && system !== null ? round(Number(user[1]) + Number(system[1]), 2) : null,
        peakRssMiB: match !== null ? round(Number(match[1]) / 1024, 1) : (sampled ?? null),
        rssSource: match !== null ? "/usr/bin/time -v" : "VmRSS sampled every 20 ms"
      })
    })
  })

// ---------------------------------------------------------------------------------------------------------------
// The run

interface Upload {
  readonly seconds: number
  /** User + system CPU seconds of the server process (all its threads; not its PostgreSQL) during the upload. */
  readonly cpuSeconds: number | null
  readonly mbPerSecond: number
  readonly idleRssMiB: number
  readonly peakRssMiB: number
  readonly deployment: Record<string, unknown>
}

/** One size: `runs` paired runs, each an upload and then (server idle) tar -xzf of the same file. */
interface Row {
  /** Where the server kept the artifacts. */
  readonly store: string
  readonly sizeMiB: number
  readonly bytes: number
  readonly files: number
  readonly uncompressedBytes: number
  readonly hostplane: ReadonlyArray<Upload>
  readonly tar: ReadonlyArray<Extraction & { readonly mbPerSecond: number }>
  /** hostplane MB/s / tar MB/s of each paired run. */
  readonly ratios: ReadonlyArray<number>
  /** tar CPU seconds / hostplane CPU seconds of each paired run (more than 1: the server spent less CPU). */
  readonly cpuRatios: ReadonlyArray<number>
  readonly loadAverage: ReadonlyArray<number>
}

const main = async () => {
  log(
    `node ${process.version}, ${Os.cpus().length} CPUs; bundles of ${sizesMiB.join(", ")} MiB; time bound ${timeoutS} s`
  )
  const tempDir = await makeTempDir("hostplane-bench-upload-")

  // 1. The bundles, on disk: built before the server starts, so building competes with nothing. One per run: the
  // same bytes twice would be stored once, and a repeated upload would skip work a new one does.
  const bundles: Array<{ readonly sizeMiB: number; readonly runs: Array<BuiltBundle> }> = []
  for (const sizeMiB of [1, ...sizesMiB]) {
    const built: Array<BuiltBundle> = []
    for (let run = 0; run < (sizeMiB === 1 ? 1 : runs); run++) {
      built.push(await buildBundle(Path.join(tempDir, `bundle-${sizeMiB}-${run}.tar.gz`), sizeMiB * MiB))
    }
    log(
      `bundles of ${sizeMiB} MiB: ${built.length} × ${round(built[0].bytes / MiB, 1)} MiB gzipped, ${built[0].files} files, ${round(built[0].uncompressedBytes / MiB, 1)} MiB of content`
    )
    bundles.push({ sizeMiB, runs: built })
  }

  const rows: Array<Row> = []
  for (const store of stores) rows.push(...(await measure(store, tempDir, bundles)))

  // 4. Table and JSON.
  printTable(rows)
  const report = {
    benchmark: "bundle upload: hostplane vs tar -xzf",
    date: new Date().toISOString(),
    commit: gitCommit(),
    ...machine(),
    loadAverage: Os.loadavg().map((value) => round(value, 2)),
    rows
  }
  await writeReport("upload", report, save)
}

/** An S3 bucket on loopback for the `s3` store: s3rver (a real S3 server in Node) over a folder of `dir`. */
const startBucket = async (dir: string) => {
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory: Path.join(dir, "s3"),
    configureBuckets: [{ name: "hostplane", configs: [] }]
  })
  const { port } = await server.run()
  log(`s3rver: bucket http://127.0.0.1:${port}/hostplane`)
  return {
    env: {
      SERVICE_S3_URL: `http://127.0.0.1:${port}/hostplane`,
      SERVICE_S3_ACCESS_KEY_ID: "S3RVER",
      SERVICE_S3_SECRET_ACCESS_KEY: "S3RVER"
    }
  }
}

/** Steps 2 and 3 for one store: its own server on a fresh data dir, every bundle uploaded `runs` times. */
const measure = async (
  store: "disk" | "s3",
  tempDir: string,
  bundles: ReadonlyArray<{ readonly sizeMiB: number; readonly runs: ReadonlyArray<BuiltBundle> }>
): Promise<Array<Row>> => {
  // 2. The real server, on a fresh data dir and a free port.
  const storeDir = Path.join(tempDir, store)
  await Fs.promises.mkdir(storeDir, { recursive: true })
  const bucket = store === "s3" ? await startBucket(storeDir) : undefined
  const { child: server, base, token } = await startHostplane(storeDir, bucket?.env ?? {})
  const auth = { authorization: `Bearer ${token}` }
  const create = async (path: string, body: string, what: string) =>
    json(
      await request("POST", `${base}${path}`, { "content-type": "application/json", ...auth }, body, 10_000),
      what,
      201
    )
  await create("/v1/orgs", '{"name":"Bench uploads","slug":"bench-uploads"}', "org create")
  await create("/v1/orgs/bench-uploads/projects", '{"name":"site"}', "project create")
  const uploadUrl = `${base}/v1/orgs/bench-uploads/projects/site/deployments`
  log(`hostplane (${store}): ready, org bench-uploads, project site`)

  // 3. Each bundle, `runs` times: the upload, then (server idle) the baseline extraction of the same file.
  const upload = async (sizeMiB: number, built: BuiltBundle): Promise<Upload> => {
    await sleep(1500) // let the server settle (and collect) before its idle RSS is read
    const idleRssMiB = round((rssKiB(server.pid) ?? 0) / 1024, 1)
    const sampler = sampleRss(server.pid)
    const cpuBefore = cpuSeconds(server.pid)
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
    const cpuAfter = cpuSeconds(server.pid)
    const cpu = cpuBefore !== undefined && cpuAfter !== undefined ? round(cpuAfter - cpuBefore, 2) : null
    const deployment = json(reply, `upload of ${sizeMiB} MiB`, 201)
    if (deployment.bytes !== built.bytes) throw new Error(`the server counted ${deployment.bytes} bytes`)
    const mbPerSecond = round(built.bytes / 1e6 / seconds, 1)
    return { seconds: round(seconds, 3), cpuSeconds: cpu, mbPerSecond, idleRssMiB, peakRssMiB, deployment }
  }
  const rows: Array<Row> = []
  for (const { sizeMiB, runs: built } of bundles) {
    const { bytes, files, uncompressedBytes } = built[0]
    const row: Row = {
      store,
      sizeMiB,
      bytes,
      files,
      uncompressedBytes,
      hostplane: [],
      tar: [],
      ratios: [],
      cpuRatios: [],
      loadAverage: []
    }
    for (const [run, bundle] of built.entries()) {
      const ours = await upload(sizeMiB, bundle)
      const folder = Path.join(tempDir, `extract-${sizeMiB}`)
      const tar = await extract(bundle.file, folder)
      await Fs.promises.rm(folder, { recursive: true, force: true })
      const tarMbPerSecond = round(bundle.bytes / 1e6 / tar.seconds, 1)
      log(
        `${store}, ${sizeMiB} MiB, run ${run + 1}: hostplane ${ours.seconds.toFixed(2)} s (${ours.mbPerSecond} MB/s, CPU ${ours.cpuSeconds ?? "n/a"} s, peak RSS ${ours.peakRssMiB} MiB), tar -xzf ${tar.seconds.toFixed(2)} s (CPU ${tar.cpuSeconds ?? "n/a"} s); ${loadLine()}`
      )
      ;(row.hostplane as Array<Upload>).push(ours)
      ;(row.tar as Array<Row["tar"][number]>).push({
        ...tar,
        seconds: round(tar.seconds, 3),
        mbPerSecond: tarMbPerSecond
      })
      ;(row.ratios as Array<number>).push(ours.mbPerSecond / tarMbPerSecond)
      if (ours.cpuSeconds !== null && ours.cpuSeconds > 0 && tar.cpuSeconds !== null) {
        ;(row.cpuRatios as Array<number>).push(tar.cpuSeconds / ours.cpuSeconds)
      }
    }
    if (sizeMiB === 1) continue // warm-up: JIT, pools, first artifact folders
    rows.push({ ...row, loadAverage: Os.loadavg().map((value) => round(value, 2)) })
  }
  // The server stays up (the harness stops every child at the end); the bucket lives as long as this process.
  return rows
}

const printTable = (rows: ReadonlyArray<Row>) => {
  const header = [
    "store",
    "bundle",
    "files",
    "content MiB",
    "hostplane s",
    "CPU s",
    "MB/s",
    "idle RSS",
    "peak RSS",
    "tar -xzf s",
    "CPU s",
    "MB/s",
    "peak RSS",
    "hostplane/tar MB/s"
  ]
  const median = (values: ReadonlyArray<number>) => spread(values).median
  const medianCpu = (values: ReadonlyArray<number | null>) => {
    const known = values.filter((value): value is number => value !== null)
    return known.length === 0 ? "n/a" : median(known).toFixed(2)
  }
  const body = rows.map((row) => [
    row.store,
    `${round(row.bytes / MiB, 1)} MiB`,
    String(row.files),
    String(round(row.uncompressedBytes / MiB, 1)),
    median(row.hostplane.map((run) => run.seconds)).toFixed(2),
    medianCpu(row.hostplane.map((run) => run.cpuSeconds)),
    median(row.hostplane.map((run) => run.mbPerSecond)).toFixed(1),
    Math.min(...row.hostplane.map((run) => run.idleRssMiB)).toFixed(1),
    Math.max(...row.hostplane.map((run) => run.peakRssMiB)).toFixed(1),
    median(row.tar.map((run) => run.seconds)).toFixed(2),
    medianCpu(row.tar.map((run) => run.cpuSeconds)),
    median(row.tar.map((run) => run.mbPerSecond)).toFixed(1),
    row.tar[0].peakRssMiB === null ? "n/a" : Math.max(...row.tar.map((run) => run.peakRssMiB ?? 0)).toFixed(1),
    `${median(row.ratios).toFixed(2)}x`
  ])
  const [headerLine, ...bodyLines] = alignColumns([header, ...body])
  console.log(
    `\nUpload of a gzipped tar bundle (medians of ${runs} paired runs; MB/s = compressed 10^6 bytes per second; CPU s = user + system seconds of the server process and of tar with its gzip; RSS in MiB, server process only: lowest idle, highest peak)`
  )
  console.log(headerLine)
  console.log("-".repeat(headerLine.length))
  for (const line of bodyLines) console.log(line)
  for (const row of rows) {
    // The growth of one upload moves with when V8 collects the buffers already passed on (bench/README.md): the
    // median beside the largest.
    const growth = spread(row.hostplane.map((run) => run.peakRssMiB - run.idleRssMiB))
    console.log(
      `${row.store}, ${round(row.bytes / MiB, 1)} MiB: hostplane/tar -xzf ${formatRatio(row.ratios)}, server RSS growth median ${growth.median.toFixed(1)}, up to ${growth.max.toFixed(1)} MiB; load average ${row.loadAverage.join(" ")}`
    )
    if (row.cpuRatios.length > 0) {
      console.log(
        `${row.store}, ${round(row.bytes / MiB, 1)} MiB: CPU seconds, tar -xzf/hostplane ${formatRatio(row.cpuRatios)}; load average ${row.loadAverage.join(" ")}`
      )
    }
  }
  if (rows.length > 0) console.log(`(tar peak RSS: ${rows[0].tar[0].rssSource})`)
}

await runBench(main, timeoutS)
