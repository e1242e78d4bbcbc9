// `npm run bench:database -- [--size <MiB>] [--runs <n>] [--timeout <s>] [--save]`
//
// Fills a project database of the real hostplane server (embedded PostgreSQL, fresh data dir, its own cluster) to
// `--size` MiB, then times a physical image of it (`POST database/export`: the generation path, base backup streamed
// as one .tar.gz with its sha256 into the backup store) beside `tar -czf` of the same data directory, with the
// server's peak RSS; then the restore of a generation of that size (`POST database/restore` until `done`). See README.md.
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import { execFile, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import {
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
import { alignColumns, formatRatio, gitCommit, loadLine, machine, spread, writeReport } from "./support/report.ts"

const usage = `usage: npm run bench:database -- [options]
  --size <MiB>   database size to fill before imaging (default 1024; smaller runs faster on a loaded machine)
  --runs <n>     paired runs (image, then tar -czf of the same data directory) (default 1)
  --timeout <s>  abort everything after this many seconds (default 3600)
  --save         write the JSON result to bench/results/ instead of the system temp dir`

const { values: parsed, fail } = parseOptions(usage, {
  size: { type: "string" },
  runs: { type: "string" },
  timeout: { type: "string" },
  save: { type: "boolean", default: false }
})
const sizeMiB = parsed.size === undefined ? 1024 : Number(parsed.size)
if (!Number.isFinite(sizeMiB) || sizeMiB < 16) fail(`invalid --size ${parsed.size} (at least 16)`)
const runs = parsed.runs === undefined ? 1 : Number(parsed.runs)
if (!Number.isInteger(runs) || runs < 1) fail(`invalid --runs ${parsed.runs}`)
const timeoutS = parsed.timeout === undefined ? 3600 : Number(parsed.timeout)
if (!Number.isFinite(timeoutS) || timeoutS <= 0) fail(`invalid --timeout ${parsed.timeout}`)
const save = parsed.save === true

const MiB = 1024 * 1024

const json = (reply: Reply, what: string, status: number) => {
  const body = reply.body.toString("utf8")
  if (reply.status !== status) throw new Error(`${what} answered ${reply.status}: ${body.slice(0, 400)}`)
  return JSON.parse(body) as Record<string, any>
}

interface Connect {
  readonly host: string
  readonly port: number
  readonly user: string
  readonly password: string
}

/** The real psql as the project role; answers its unaligned output. */
const psql = (at: Connect, command: string) =>
  new Promise<string>((resolve, reject) =>
    execFile(
      "psql",
      ["-h", at.host, "-p", String(at.port), "-U", at.user, "-d", "app", "-XAtqc", command],
      { env: { ...process.env, PGPASSWORD: at.password }, maxBuffer: 1 << 20 },
      (error, stdout, stderr) => (error === null ? resolve(stdout.trim()) : reject(new Error(stderr)))
    )
  )

/** `tar -czf` of the cluster's data directory (gzip's default level 6, as the image's); exit 1 "file changed" is expected live. */
const tarCzf = (dataDir: string, out: string) =>
  new Promise<{ seconds: number; bytes: number; peakRssMiB: number | null }>((resolve, reject) => {
    const started = performance.now()
    // pg_wal's contents are left out as a base backup leaves them out (the image adds back only the segments its
    // backup needs): otherwise the baseline would compress the fill's whole WAL too.
    const args = ["-czf", out, "--exclude=./pg_wal/*", "-C", dataDir, "."]
    const timed = Fs.existsSync("/usr/bin/time")
    const child = timed
      ? spawn("/usr/bin/time", ["-v", "tar", ...args], {
          stdio: ["ignore", "ignore", "pipe"],
          env: { ...process.env, GZIP: "-6" }
        })
      : spawn("tar", args, { stdio: ["ignore", "ignore", "pipe"] })
    let stderr = ""
    child.stderr!.on("data", (chunk) => (stderr += chunk))
    child.on("error", reject)
    child.on("exit", (code) => {
      if (code !== 0 && code !== 1) return reject(new Error(`tar -czf exited ${code}: ${stderr.slice(-400)}`))
      const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr)
      resolve({
        seconds: (performance.now() - started) / 1000,
        bytes: Fs.statSync(out).size,
        peakRssMiB: rss === null ? null : round(Number(rss[1]) / 1024, 1)
      })
    })
  })

const sampleRss = (pid: number) => {
  const sampler = samplePeak(() => rssKiB(pid), hasProc ? 20 : 200)
  return { stop: () => round((sampler.stop().peak ?? 0) / 1024, 1) }
}

const main = async () => {
  log(`node ${process.version}, ${Os.cpus().length} CPUs; a ${sizeMiB} MiB database; time bound ${timeoutS} s`)
  const tempDir = await makeTempDir("hostplane-bench-database-")
  // No grid boundary during the run: the generations are the baseline and what the restores seal.
  process.env.SERVICE_DB_BACKUP_INTERVAL = "1000 days"
  const { child: server, base, token } = await startHostplane(tempDir)
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
  const post = async (path: string, body: string, what: string, status: number, timeoutMs = 60_000) =>
    json(await request("POST", `${base}${path}`, headers, body, timeoutMs), what, status)
  const get = async (path: string, what: string) => json(await request("GET", `${base}${path}`, headers), what, 200)
  await post("/v1/orgs", '{"name":"Bench database","slug":"bench-database"}', "org create", 201)
  const project = await post("/v1/orgs/bench-database/projects", '{"name":"db"}', "project create", 201)
  const path = "/v1/orgs/bench-database/projects/db/database"
  const db = (await post(path, "{}", "database create", 200, 300_000)) as Connect
  const dataDir = Path.join(tempDir, "hostplane", "node", "db", String(project.id), "data")
  log(`hostplane: database on port ${db.port}, cluster in ${dataDir}`)

  // 1. Fill: rows of mixed text (md5 digits compress about 2:1 under gzip) until the database reaches the size.
  const fillStarted = performance.now()
  await psql(db, "create table filler (id bigint, payload text)")
  let next = 1
  const batch = 400_000
  for (;;) {
    const bytes = Number(await psql(db, "select pg_database_size('app')"))
    if (bytes >= sizeMiB * MiB) break
    await psql(
      db,
      `insert into filler select g, md5(g::text) || md5((g * 7)::text) || repeat(md5((g % 97)::text), 3) from generate_series(${next}, ${next + batch - 1}) g`
    )
    next += batch
  }
  const databaseBytes = Number(await psql(db, "select pg_database_size('app')"))
  log(
    `filled: ${round(databaseBytes / MiB, 1)} MiB in database app, ${next - 1} rows, ${round((performance.now() - fillStarted) / 1000, 1)} s; ${loadLine()}`
  )

  // 2. The image (the generation path) beside tar -czf of the same data directory, `runs` times.
  const images: Array<{ seconds: number; bytes: number; idleRssMiB: number; peakRssMiB: number }> = []
  const tars: Array<{ seconds: number; bytes: number; peakRssMiB: number | null }> = []
  const ratios: Array<number> = []
  const backups = Path.join(tempDir, "hostplane", "backups")
  for (let run = 0; run < runs; run++) {
    await sleep(1500)
    const idleRssMiB = round((rssKiB(server.pid) ?? 0) / 1024, 1)
    const sampler = sampleRss(server.pid)
    const started = performance.now()
    let key: string
    let peakRssMiB: number
    try {
      key = (await post(`${path}/export`, "{}", "export", 200, 3_600_000)).key as string
    } finally {
      peakRssMiB = sampler.stop()
    }
    const seconds = (performance.now() - started) / 1000
    const bytes = Fs.statSync(Path.join(backups, key)).size
    images.push({ seconds: round(seconds, 2), bytes, idleRssMiB, peakRssMiB })
    const out = Path.join(tempDir, `tar-${run}.tar.gz`)
    const tar = await tarCzf(dataDir, out)
    Fs.rmSync(out, { force: true })
    tars.push({ ...tar, seconds: round(tar.seconds, 2) })
    ratios.push(tar.seconds / seconds)
    log(
      `run ${run + 1}: image ${seconds.toFixed(1)} s (${round(bytes / MiB, 1)} MiB, server RSS idle ${idleRssMiB} MiB, peak ${peakRssMiB} MiB), tar -czf ${tar.seconds.toFixed(1)} s (${round(tar.bytes / MiB, 1)} MiB); ${loadLine()}`
    )
  }

  // 3. Restore: to the empty baseline first (its sealing keeps the full database as a generation), then to that
  // generation, timed from the request to `done`.
  const operation = async (body: string) => {
    const started = performance.now()
    const sampler = sampleRss(server.pid)
    const { operationId } = await post(`${path}/restore`, body, "restore", 202)
    for (;;) {
      const op = await get(`${path}/operations/${operationId}`, "operation")
      if (op.terminalCode !== null) {
        if (op.terminalCode !== "done") throw new Error(`restore ended ${op.terminalCode}`)
        break
      }
      await sleep(250)
    }
    return { seconds: round((performance.now() - started) / 1000, 2), peakRssMiB: sampler.stop() }
  }
  const toBaseline = await operation('{"epoch":1,"seq":1}')
  const generations = (await get(`${path}/generations`, "generations")).items as Array<Record<string, any>>
  const full = generations.find((g) => g.epoch === 1 && g.seq === 2)
  if (full === undefined) throw new Error(`no sealed generation 1/2: ${JSON.stringify(generations)}`)
  log(`restore to the empty baseline (sealing ${round(full.bytes / MiB, 1)} MiB first): ${toBaseline.seconds} s`)
  const restore = await operation('{"epoch":1,"seq":2}')
  const rows = Number(await psql(db, "select count(*) from filler"))
  if (rows !== next - 1) throw new Error(`the restored database holds ${rows} rows, not ${next - 1}`)
  log(
    `restore of generation 1/2 (${round(full.bytes / MiB, 1)} MiB, ${rows} rows back): ${restore.seconds} s; ${loadLine()}`
  )

  // 4. Table and JSON.
  const median = (values: ReadonlyArray<number>) => spread(values).median
  const [headerLine, ...bodyLines] = alignColumns([
    ["database", "image s", "image MiB", "idle RSS", "peak RSS", "tar -czf s", "tar MiB", "tar RSS", "tar s / image s"],
    [
      `${round(databaseBytes / MiB, 0)} MiB`,
      median(images.map((r) => r.seconds)).toFixed(1),
      String(round(median(images.map((r) => r.bytes)) / MiB, 1)),
      Math.min(...images.map((r) => r.idleRssMiB)).toFixed(1),
      Math.max(...images.map((r) => r.peakRssMiB)).toFixed(1),
      median(tars.map((r) => r.seconds)).toFixed(1),
      String(round(median(tars.map((r) => r.bytes)) / MiB, 1)),
      tars[0].peakRssMiB === null ? "n/a" : String(Math.max(...tars.map((r) => r.peakRssMiB ?? 0))),
      `${median(ratios).toFixed(2)}x`
    ]
  ])
  console.log(
    `\nPhysical image of a ${round(databaseBytes / MiB, 0)} MiB database vs tar -czf of its data directory (RSS in MiB, server process only)`
  )
  console.log(headerLine)
  console.log("-".repeat(headerLine.length))
  for (const line of bodyLines) console.log(line)
  console.log(`image speed vs tar -czf: ${formatRatio(ratios)}`)
  console.log(
    `restore of the ${round(full.bytes / MiB, 1)} MiB generation: ${restore.seconds} s (server peak RSS ${restore.peakRssMiB} MiB); ${loadLine()}`
  )
  const report = {
    benchmark: "database generation vs tar -czf, and restore",
    date: new Date().toISOString(),
    commit: gitCommit(),
    ...machine(),
    loadAverage: Os.loadavg().map((value) => round(value, 2)),
    databaseBytes,
    rows: next - 1,
    images,
    tars,
    ratios,
    restoreToBaseline: toBaseline,
    restore: { ...restore, generationBytes: full.bytes }
  }
  await writeReport("database", report, save)
}

await runBench(main, timeoutS)
