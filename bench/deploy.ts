// `npm run bench:deploy -- [--sizes <MiB,...>] [--timeout <s>] [--save]`
//
// `hostplane deploy` of generated folders (many files, mixed compressible and incompressible) to the real server,
// beside the baseline of the same folder done by hand: `tar -czf` of it, then `curl --data-binary @bundle.tar.gz` of
// the result to the same endpoint, in the same run. Prints seconds and MB/s of both and the CLI's peak RSS: the CLI
// streams the bundle while it uploads, so its peak RSS is the same for a 10 MiB and a 100 MiB folder. See README.md.
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import {
  log,
  makeTempDir,
  parseOptions,
  type Reply,
  repoRoot,
  request,
  round,
  rssKiB,
  runBench,
  samplePeak,
  startHostplane
} from "./support/harness.ts"
import { textOf } from "./support/bundles.ts"
import { alignColumns, gitCommit, machine, writeReport } from "./support/report.ts"

const usage = `usage: npm run bench:deploy -- [options]
  --sizes <MiB,...>   folder sizes (file bytes) to deploy, one after the other (default 10,100)
  --timeout <s>       abort everything after this many seconds (default 900)
  --save              write the JSON result to bench/results/ instead of the system temp dir`

const { values: parsed, fail } = parseOptions(usage, {
  sizes: { type: "string" },
  timeout: { type: "string" },
  save: { type: "boolean", default: false }
})
const sizesMiB = (parsed.sizes ?? "10,100").split(",").map((raw) => {
  const value = Number(raw)
  return raw.trim() !== "" && Number.isFinite(value) && value >= 1 && value <= 400 ? value : fail(`invalid size ${raw}`)
})
const timeoutS = parsed.timeout === undefined ? 900 : Number(parsed.timeout)
if (!Number.isFinite(timeoutS) || timeoutS <= 0) fail(`invalid --timeout ${parsed.timeout}`)
const save = parsed.save === true

const MiB = 1024 * 1024
const cliBin = Path.join(repoRoot, "packages/cli/bin/hostplane.js")

const json = (reply: Reply, what: string, status: number) => {
  const body = reply.body.toString("utf8")
  if (reply.status !== status) throw new Error(`${what} answered ${reply.status}: ${body.slice(0, 400)}`)
  return JSON.parse(body) as Record<string, unknown>
}

// ---------------------------------------------------------------------------------------------------------------
// Folders: service.json, a worker, and assets until the files reach the size. Assets alternate between
// incompressible bytes (images, fonts) and text of random words (about 3:1 under gzip), 1 to 257 KiB each.

const buildFolder = (dir: string, targetBytes: number) => {
  Fs.mkdirSync(Path.join(dir, "worker"), { recursive: true })
  Fs.writeFileSync(Path.join(dir, "service.json"), JSON.stringify({ name: "bench", main: "worker/index.js" }))
  Fs.writeFileSync(Path.join(dir, "worker/index.js"), "export default { fetch: () => new Response('bench') }\n")
  let bytes = 0
  let files = 2
  while (bytes < targetBytes) {
    const size = Math.min(targetBytes - bytes, 1024 + Math.floor(Math.random() ** 4 * 256 * 1024))
    const folder = Path.join(dir, `assets/d${files % 50}`)
    Fs.mkdirSync(folder, { recursive: true })
    const incompressible = files % 2 === 0
    Fs.writeFileSync(
      Path.join(folder, `f${files}.${incompressible ? "bin" : "txt"}`),
      incompressible ? randomBytes(size) : textOf(size)
    )
    bytes += size
    files++
  }
  return { bytes, files }
}

// ---------------------------------------------------------------------------------------------------------------
// Processes: run to completion, timed, with the peak RSS of the process (VmRSS every 20 ms) or of tar's tree

const hasGnuTime = Fs.existsSync("/usr/bin/time")

interface Ran {
  readonly seconds: number
  readonly peakRssMiB: number | null
  readonly stdout: string
}

const runTimed = (command: string, args: Array<string>, env: NodeJS.ProcessEnv, gnuTime: boolean) =>
  new Promise<Ran>((resolve, reject) => {
    const started = performance.now()
    const proc = gnuTime
      ? spawn("/usr/bin/time", ["-v", command, ...args], { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] })
      : spawn(command, args, { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] })
    const sampler = !gnuTime && proc.pid !== undefined ? samplePeak(() => rssKiB(proc.pid!), 20) : undefined
    let stdout = ""
    let stderr = ""
    proc.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
    proc.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    proc.on("error", reject)
    proc.on("exit", (code) => {
      const seconds = (performance.now() - started) / 1000
      const sampled = sampler?.stop().peak
      if (code !== 0) return reject(new Error(`${command} exited with ${code}: ${stderr.slice(-600)}`))
      const match = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr)
      const peakKiB = match !== null ? Number(match[1]) : sampled
      resolve({ seconds, peakRssMiB: peakKiB === undefined ? null : round(peakKiB / 1024, 1), stdout })
    })
  })

const hasCurl = await new Promise<boolean>((resolve) => {
  const probe = spawn("curl", ["--version"], { stdio: "ignore" })
  probe.on("error", () => resolve(false))
  probe.on("exit", (code) => resolve(code === 0))
})

// ---------------------------------------------------------------------------------------------------------------
// The run

interface Row {
  readonly sizeMiB: number
  readonly fileBytes: number
  readonly files: number
  readonly compressedBytes: number
  readonly cli: { readonly seconds: number; readonly mbPerSecond: number; readonly peakRssMiB: number | null }
  readonly baseline: {
    readonly tarSeconds: number
    readonly tarPeakRssMiB: number | null
    readonly curlSeconds: number | null
    readonly seconds: number | null
  }
}

const main = async () => {
  log(`node ${process.version}, ${Os.cpus().length} CPUs; folders of ${sizesMiB.join(", ")} MiB; bound ${timeoutS} s`)
  if (!hasCurl) log("curl is not installed: the baseline times tar -czf only")
  const tempDir = await makeTempDir("hostplane-bench-deploy-")
  const folders: Array<{
    readonly sizeMiB: number
    readonly dir: string
    readonly bytes: number
    readonly files: number
  }> = []
  for (const sizeMiB of sizesMiB) {
    const dir = Path.join(tempDir, `site-${sizeMiB}`)
    const built = buildFolder(dir, sizeMiB * MiB)
    log(`folder ${sizeMiB} MiB: ${built.files} files`)
    folders.push({ sizeMiB, dir, ...built })
  }

  const { base, token } = await startHostplane(tempDir)
  const auth = { authorization: `Bearer ${token}` }
  const created = json(
    await request(
      "POST",
      `${base}/v1/orgs`,
      { "content-type": "application/json", ...auth },
      '{"name":"Bench deploys","slug":"bench-deploys"}',
      10_000
    ),
    "org create",
    201
  )
  log(`hostplane: ready, org ${String(created.slug)}`)
  const cliEnv = {
    ...process.env,
    HOSTPLANE_TOKEN: token,
    HOSTPLANE_URL: base,
    HOSTPLANE_CONFIG_DIR: Path.join(tempDir, "cli-config")
  }

  const rows: Array<Row> = []
  for (const folder of folders) {
    // The CLI: check, stream, upload (Node 22 runs the bin; no TTY, so plain progress lines).
    const cli = await runTimed(
      process.execPath,
      [cliBin, "deploy", folder.dir, "--org", "bench-deploys", "--project", "site", "--json"],
      cliEnv,
      false
    )
    const deployed = JSON.parse(cli.stdout) as { deployment: { bytes: number; version: number } }
    const compressedBytes = deployed.deployment.bytes
    log(
      `${folder.sizeMiB} MiB: hostplane deploy ${round(cli.seconds, 2)} s, version ${deployed.deployment.version}, ${round(compressedBytes / MiB, 1)} MiB gzipped, CLI peak RSS ${cli.peakRssMiB} MiB`
    )
    // The baseline: the same folder by hand, a temp file and then its upload.
    const bundle = Path.join(tempDir, `bundle-${folder.sizeMiB}.tar.gz`)
    const tar = await runTimed(
      "tar",
      ["-czf", bundle, "-C", folder.dir, "service.json", "worker", "assets"],
      process.env,
      hasGnuTime
    )
    let curlSeconds: number | null = null
    if (hasCurl) {
      const curl = await runTimed(
        "curl",
        [
          "--silent",
          "--show-error",
          "--fail",
          "--data-binary",
          `@${bundle}`,
          "-H",
          "content-type: application/gzip",
          "-H",
          `authorization: Bearer ${token}`,
          `${base}/v1/orgs/bench-deploys/projects/site/deployments`
        ],
        process.env,
        false
      )
      curlSeconds = curl.seconds
    }
    await Fs.promises.rm(bundle, { force: true })
    log(
      `${folder.sizeMiB} MiB: tar -czf ${round(tar.seconds, 2)} s${curlSeconds === null ? "" : ` + curl ${round(curlSeconds, 2)} s`}`
    )
    const mbPerSecond = round(compressedBytes / 1e6 / cli.seconds, 1)
    rows.push({
      sizeMiB: folder.sizeMiB,
      fileBytes: folder.bytes,
      files: folder.files,
      compressedBytes,
      cli: { seconds: round(cli.seconds, 3), mbPerSecond, peakRssMiB: cli.peakRssMiB },
      baseline: {
        tarSeconds: round(tar.seconds, 3),
        tarPeakRssMiB: tar.peakRssMiB,
        curlSeconds: curlSeconds === null ? null : round(curlSeconds, 3),
        seconds: curlSeconds === null ? null : round(tar.seconds + curlSeconds, 3)
      }
    })
  }

  const report = {
    benchmark: "hostplane deploy vs tar -czf + curl --data-binary",
    date: new Date().toISOString(),
    commit: gitCommit(),
    machine: machine(),
    rows
  }
  await writeReport("deploy", report, save)
  const table = [
    [
      "folder",
      "files",
      "gzipped MiB",
      "deploy s",
      "deploy MB/s",
      "CLI peak RSS",
      "tar s",
      "curl s",
      "tar+curl s",
      "deploy/(tar+curl)"
    ],
    ...rows.map((row) => [
      `${row.sizeMiB} MiB`,
      String(row.files),
      (row.compressedBytes / MiB).toFixed(1),
      row.cli.seconds.toFixed(2),
      row.cli.mbPerSecond.toFixed(1),
      row.cli.peakRssMiB === null ? "n/a" : `${row.cli.peakRssMiB.toFixed(1)} MiB`,
      row.baseline.tarSeconds.toFixed(2),
      row.baseline.curlSeconds === null ? "n/a" : row.baseline.curlSeconds.toFixed(2),
      row.baseline.seconds === null ? "n/a" : row.baseline.seconds.toFixed(2),
      row.baseline.seconds === null ? "n/a" : `${(row.cli.seconds / row.baseline.seconds).toFixed(2)}x`
    ])
  ]
  console.log(`\n${alignColumns(table).join("\n")}`)
  console.log("\n(MB/s = gzipped 10^6 bytes per second; the CLI's RSS is VmRSS sampled every 20 ms)")
}

await runBench(main, timeoutS)
