// `npm run bench:git -- [--size <MiB>] [--runs <n>] [--timeout <s>] [--save]`
//
// Clones a repository whose pack is about 50 MiB from the real hostplane server (embedded PostgreSQL, fresh data dir)
// over smart HTTP and over SSH, beside `git clone --no-local file://` of the same repository in the same run (a real
// upload-pack making a pack over a pipe, not a copy or hardlink of the object files) and beside Debian's OpenSSH
// server serving the same repository through `git-shell` (the peer an operator would otherwise run for SSH), and
// prints the time ratios, the CPU each side spent and the server's peak RSS. Flat memory shows as a peak RSS far below
// the pack size. See README.md.
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import {
  freePort,
  hasProc,
  log,
  makeTempDir,
  parseOptions,
  processCpu,
  serverProcessCpu,
  round,
  rssKiB,
  runBench,
  samplePeak,
  sleep,
  startHostplane
} from "./support/harness.ts"
import {
  git,
  negotiatedCipher,
  serveRepository,
  sourceRepository,
  sshdPath,
  sshKey,
  startOpenSsh
} from "./support/git.ts"
import { alignColumns, gitCommit, loadLine, machine, spread, writeReport } from "./support/report.ts"

const usage = `usage: npm run bench:git -- [options]
  --size <MiB>      incompressible content in the repository (default 50: a pack of about 50 MiB)
  --runs <n>        clones per transport; the median is reported (default 3)
  --timeout <s>     abort everything after this many seconds (default 900)
  --save            write the JSON result to bench/results/ instead of the system temp dir`

const { values: parsed, fail } = parseOptions(usage, {
  size: { type: "string" },
  runs: { type: "string" },
  timeout: { type: "string" },
  save: { type: "boolean", default: false }
})
const sizeMiB = parsed.size === undefined ? 50 : Number(parsed.size)
if (!Number.isFinite(sizeMiB) || sizeMiB < 1) fail(`invalid --size ${parsed.size}`)
const runs = parsed.runs === undefined ? 3 : Number(parsed.runs)
if (!Number.isInteger(runs) || runs < 1) fail(`invalid --runs ${parsed.runs}`)
const timeoutS = parsed.timeout === undefined ? 900 : Number(parsed.timeout)
if (!Number.isFinite(timeoutS) || timeoutS <= 0) fail(`invalid --timeout ${parsed.timeout}`)
const save = parsed.save === true
const MiB = 1024 * 1024

// The server runs on this same Node: whether ssh2 encrypts natively there (scripts/ssh2-binding.mjs) decides much of
// the SSH figure, so it is printed with it.
const ssh2Binding = (createRequire(import.meta.url)("ssh2/lib/protocol/crypto.js") as { bindingAvailable: boolean })
  .bindingAvailable

const median = (values: ReadonlyArray<number>) => spread(values).median

const medianOf = (values: Array<number | null>, digits = 2) =>
  values.every((value) => value !== null) ? round(median(values as Array<number>), digits) : null

interface Measured {
  readonly seconds: number
  /**
   * When the pack began to arrive: `index-pack`'s start, from `git clone`'s own start (its trace2 events). Before it
   * are the transport's set-up and every request up to the pack's first bytes, which the wall time mixes with the
   * transfer itself.
   */
  readonly packStartSeconds: number | null
  readonly peakRssMiB: number
  /** The server's user + system CPU time during the clone (Linux only; less skewed by other load than wall time). */
  readonly serverCpuSeconds: number | null
  /** The server's git processes (upload-pack, pack-objects) that ended during the clone. */
  readonly serverGitCpuSeconds: number | null
  /** The cloning side: git clone and all it ran (index-pack, ssh, git-remote-http; upload-pack too for file://). */
  readonly clientCpuSeconds: number | null
}

/** `index-pack`'s start in a `GIT_TRACE2_EVENT` file, in seconds from the first event of the traced command. */
const packStart = (traceFile: string): number | null => {
  const events = Fs.existsSync(traceFile)
    ? Fs.readFileSync(traceFile, "utf8")
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as { event?: string; time?: string; argv?: Array<string> })
    : []
  const first = events.find((event) => event.time !== undefined)
  const indexPack = events.find(
    (event) => event.event === "child_start" && (event.argv ?? []).some((arg) => arg.includes("index-pack"))
  )
  if (first?.time === undefined || indexPack?.time === undefined) return null
  return round((Date.parse(indexPack.time) - Date.parse(first.time)) / 1000, 3)
}

const cpuDelta = (before: number | undefined, after: number | undefined) =>
  before === undefined || after === undefined ? null : round(after - before, 2)

const main = async () => {
  log(
    `node ${process.version}, ${Os.cpus().length} CPUs; ${sizeMiB} MiB of content, ${runs} clones per transport; ` +
      `ssh2 native crypto binding ${ssh2Binding ? "loaded" : "NOT loaded (slow JavaScript ciphers)"}`
  )
  const tempDir = await makeTempDir("hostplane-bench-git-")

  // 1. The source repository: random (incompressible) files, so the pack is about the content's size.
  const { source, packBytes } = await sourceRepository(tempDir, sizeMiB)
  log(`source: pack of ${round(packBytes / MiB, 1)} MiB`)

  // 2. The real server: a repo, a token and a key, then the content pushed over smart HTTP.
  const hostplane = await startHostplane(tempDir)
  const server = hostplane.child
  const { keyFile, sshEnv } = await sshKey(tempDir)
  const urls = await serveRepository(hostplane, source, keyFile)
  log(`hostplane: ${urls.cloneUrl} holds the content`)

  // 3. OpenSSH serving a bare copy of the same repository (its objects hardlinked: the same pack).
  const bare = Path.join(tempDir, "source.git")
  await git(tempDir, ["clone", "-q", "--bare", source, bare])
  const openssh = sshdPath === undefined ? undefined : await startOpenSsh(tempDir, keyFile, bare, await freePort())
  if (openssh === undefined) log("OpenSSH's sshd is not installed (Debian openssh-server): its row is left out")
  const ciphers = {
    ssh: await negotiatedCipher(urls.ssh, sshEnv),
    openssh: openssh === undefined ? null : await negotiatedCipher(openssh.url, sshEnv)
  }
  log(`ssh cipher: hostplane ${ciphers.ssh}, OpenSSH ${ciphers.openssh ?? "-"}`)

  // The server's background work (revision poll, database watch, job runner) goes on during a clone and counts in its
  // CPU: measured alone over 3 s, so the clone's own share can be told apart.
  const idleBefore = processCpu(server.pid)
  await sleep(3000)
  const idleAfter = processCpu(server.pid)
  const idleCpuPerSecond =
    idleBefore === undefined || idleAfter === undefined ? null : round((idleAfter.own - idleBefore.own) / 3, 3)
  log(`server idle CPU: ${idleCpuPerSecond ?? "?"} s per s`)

  // 4. Clones, transports interleaved so drift hits them alike; the server's RSS sampled during each.
  const transports: Record<string, { url: string; env: Record<string, string>; serverPid: number | undefined }> = {
    file: { url: `file://${source}`, env: {}, serverPid: undefined },
    http: { url: urls.http, env: {}, serverPid: server.pid },
    ssh: { url: urls.ssh, env: sshEnv, serverPid: server.pid },
    ...(openssh === undefined ? {} : { openssh: { url: openssh.url, env: sshEnv, serverPid: openssh.pid } })
  }
  const results: Record<string, Array<Measured>> = Object.fromEntries(Object.keys(transports).map((name) => [name, []]))
  for (let run = 0; run < runs; run++) {
    for (const [name, { url, env, serverPid }] of Object.entries(transports)) {
      const target = Path.join(tempDir, `clone-${name}-${run}`)
      await sleep(500)
      const sampler = samplePeak(() => (serverPid === undefined ? undefined : rssKiB(serverPid)), hasProc ? 20 : 200)
      const cpuBefore = serverPid === undefined ? undefined : serverProcessCpu(serverPid)
      // The clone is this process's only child that ends meanwhile (the server runs on), so the change of this
      // process's children's CPU is the clone's.
      const clientBefore = processCpu("self")
      const traceFile = Path.join(tempDir, `trace-${name}-${run}.json`)
      const started = performance.now()
      await git(tempDir, ["clone", "-q", "--bare", "--no-local", url, target], { ...env, GIT_TRACE2_EVENT: traceFile })
      const seconds = (performance.now() - started) / 1000
      const packStartSeconds = packStart(traceFile)
      Fs.rmSync(traceFile, { force: true })
      const cpuAfter = serverPid === undefined ? undefined : serverProcessCpu(serverPid)
      const clientAfter = processCpu("self")
      const serverCpuSeconds = cpuDelta(cpuBefore?.own, cpuAfter?.own)
      const serverGitCpuSeconds = cpuDelta(cpuBefore?.children, cpuAfter?.children)
      const clientCpuSeconds = cpuDelta(clientBefore?.children, clientAfter?.children)
      const peakRssMiB = round((sampler.stop().peak ?? 0) / 1024, 1)
      results[name]!.push({
        seconds,
        packStartSeconds,
        peakRssMiB,
        serverCpuSeconds,
        serverGitCpuSeconds,
        clientCpuSeconds
      })
      log(
        `${name} clone ${run + 1}/${runs}: ${round(seconds, 2)} s (pack from ${packStartSeconds ?? "?"} s), CPU s: ` +
          `server ${serverCpuSeconds ?? "?"}, server's git ${serverGitCpuSeconds ?? "?"}, client ` +
          `${clientCpuSeconds ?? "?"}; server peak RSS ${peakRssMiB} MiB; ${loadLine()}`
      )
      Fs.rmSync(target, { recursive: true, force: true })
    }
  }

  // A ratio is only taken within one run (the file:// clone measured seconds before), then summarized.
  const summary = Object.fromEntries(
    Object.entries(results).map(([name, measured]) => {
      const ratios = measured.map((m, run) => m.seconds / results.file![run]!.seconds)
      return [
        name,
        {
          seconds: round(median(measured.map((m) => m.seconds)), 3),
          packStartSeconds: medianOf(
            measured.map((m) => m.packStartSeconds),
            3
          ),
          ratio: round(median(ratios), 2),
          ratioMin: round(Math.min(...ratios), 2),
          ratioMax: round(Math.max(...ratios), 2),
          peakRssMiB: Math.max(...measured.map((m) => m.peakRssMiB)),
          serverCpuSeconds: medianOf(measured.map((m) => m.serverCpuSeconds)),
          serverGitCpuSeconds: medianOf(measured.map((m) => m.serverGitCpuSeconds)),
          clientCpuSeconds: medianOf(measured.map((m) => m.clientCpuSeconds)),
          totalCpuSeconds: medianOf(
            measured.map((m) =>
              m.serverCpuSeconds === null || m.serverGitCpuSeconds === null || m.clientCpuSeconds === null
                ? null
                : m.serverCpuSeconds + m.serverGitCpuSeconds + m.clientCpuSeconds
            )
          )
        }
      ]
    })
  )
  const table = alignColumns([
    [
      "transport",
      "median s",
      "pack from s",
      "ratio to file:// (min median max)",
      "CPU s: server + its git + client = total (medians)",
      "server peak RSS MiB"
    ],
    ...Object.entries(summary).map(([name, row]) => [
      name === "file" ? "file:// --no-local (baseline)" : name === "openssh" ? "OpenSSH sshd + git-shell" : name,
      String(row.seconds),
      String(row.packStartSeconds ?? "?"),
      name === "file" ? "1.00" : `${row.ratioMin.toFixed(2)} ${row.ratio.toFixed(2)} ${row.ratioMax.toFixed(2)}`,
      name === "file"
        ? `- + - + ${row.clientCpuSeconds ?? "?"} = ${row.clientCpuSeconds ?? "?"}`
        : `${row.serverCpuSeconds ?? "?"} + ${row.serverGitCpuSeconds ?? "?"} + ${row.clientCpuSeconds ?? "?"} = ` +
          `${row.totalCpuSeconds ?? "?"}`,
      name === "file" ? "-" : String(row.peakRssMiB)
    ])
  ])
  for (const line of table) console.log(line)
  // hostplane's SSH against OpenSSH, paired within each run like the ratios to file://.
  const versusOpenSsh =
    results.openssh === undefined
      ? null
      : (() => {
          const ratios = results.ssh!.map((m, run) => m.seconds / results.openssh![run]!.seconds)
          const serverCpu = (m: Measured) =>
            m.serverCpuSeconds === null || m.serverGitCpuSeconds === null
              ? null
              : m.serverCpuSeconds + m.serverGitCpuSeconds
          return {
            ratio: round(median(ratios), 2),
            ratioMin: round(Math.min(...ratios), 2),
            ratioMax: round(Math.max(...ratios), 2),
            hostplaneServerCpuSeconds: medianOf(results.ssh!.map(serverCpu)),
            opensshServerCpuSeconds: medianOf(results.openssh.map(serverCpu))
          }
        })()
  if (versusOpenSsh !== null) {
    console.log(
      `hostplane SSH ÷ OpenSSH wall time (min median max): ${versusOpenSsh.ratioMin.toFixed(2)} ` +
        `${versusOpenSsh.ratio.toFixed(2)} ${versusOpenSsh.ratioMax.toFixed(2)} (target 1.1 or less); server CPU s ` +
        `per clone, all its processes: hostplane ${versusOpenSsh.hostplaneServerCpuSeconds ?? "?"}, OpenSSH ` +
        `${versusOpenSsh.opensshServerCpuSeconds ?? "?"} (target: no higher); ciphers ${ciphers.ssh} / ` +
        `${ciphers.openssh}; the server's idle CPU ${idleCpuPerSecond ?? "?"} s per s; ${loadLine()}`
    )
  }
  console.log(
    `pack ${round(packBytes / MiB, 1)} MiB; target: within 1.1x of file://, server memory flat (far below the pack); ` +
      loadLine()
  )
  const report = {
    benchmark: "git clone: hostplane smart HTTP and SSH vs git clone file://",
    date: new Date().toISOString(),
    commit: gitCommit(),
    ...machine(),
    loadAverage: Os.loadavg().map((value) => round(value, 2)),
    ssh2Binding,
    packMiB: round(packBytes / MiB, 1),
    runs,
    ciphers,
    idleCpuPerSecond,
    summary,
    versusOpenSsh,
    results
  }
  await writeReport("git", report, save)
}

await runBench(main, timeoutS)
