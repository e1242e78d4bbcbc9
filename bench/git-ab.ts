// `npm run bench:git-ab -- --baseline <checkout> [--transport http|ssh|both] [--clones <n>] [--size <MiB>]`
//
// Server CPU per clone of this tree against a baseline checkout: both servers run side by side (each with its own
// embedded PostgreSQL), hold the same content (one commit of `--size` MiB of random bytes, pushed over smart HTTP),
// and are cloned from one after the other, the order swapped every round. On a shared machine a clone's wall time
// swings by 2x and its CPU by tens of percent within minutes, so a change to the git transports is judged by these
// paired figures. Besides the process's CPU (user + system, /proc/<pid>/stat) it prints the main thread's, and the
// other threads' (V8's garbage collector helpers, mostly), from /proc/<pid>/task: the collector's timing moves the
// total more than anything else. See README.md, bench:git.
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import * as Fs from "node:fs"
import * as Path from "node:path"
import {
  type Hostplane,
  hasProc,
  log,
  makeTempDir,
  parseOptions,
  serverProcessCpu,
  round,
  runBench,
  sleep,
  startHostplane,
  threadCpu
} from "./support/harness.ts"
import { git, serveRepository, sourceRepository, sshKey } from "./support/git.ts"
import { loadLine, spread } from "./support/report.ts"

const usage = `usage: npm run bench:git-ab -- --baseline <checkout> [options]
  --baseline <dir>    another checkout of hostplane with its node_modules (git worktree add, cp -a node_modules)
  --transport <t>     http, ssh or both (default both)
  --clones <n>        clones of each server per transport (default 8)
  --size <MiB>        incompressible content in the repository (default 50)
  --warmup <n>        unmeasured clones of each server over each transport first (default 3; 0 measures a freshly
                      started server, whose collector works much harder on its first clones)
  --timeout <s>       abort everything after this many seconds (default 900)`

const { values: parsed, fail } = parseOptions(usage, {
  baseline: { type: "string" },
  transport: { type: "string" },
  clones: { type: "string" },
  size: { type: "string" },
  warmup: { type: "string" },
  timeout: { type: "string" }
})
const baselineEntry = Path.resolve(
  parsed.baseline ?? fail("--baseline is required"),
  "packages/server/src/bin/server.ts"
)
if (!Fs.existsSync(baselineEntry)) fail(`no server at ${baselineEntry}`)
const transports = parsed.transport === undefined || parsed.transport === "both" ? ["http", "ssh"] : [parsed.transport]
if (transports.some((t) => t !== "http" && t !== "ssh")) fail(`invalid --transport ${parsed.transport}`)
const clones = Number(parsed.clones ?? "8")
if (!Number.isInteger(clones) || clones < 1) fail(`invalid --clones ${parsed.clones}`)
const sizeMiB = Number(parsed.size ?? "50")
if (!Number.isFinite(sizeMiB) || sizeMiB < 1) fail(`invalid --size ${parsed.size}`)
const warmup = Number(parsed.warmup ?? "3")
if (!Number.isInteger(warmup) || warmup < 0) fail(`invalid --warmup ${parsed.warmup}`)
const timeoutS = Number(parsed.timeout ?? "900")
if (!hasProc) fail("bench:git-ab reads /proc: Linux only")

const median = (values: ReadonlyArray<number>) => spread(values).median
const mean = (values: Array<number>) => values.reduce((sum, value) => sum + value, 0) / values.length

interface Side {
  readonly name: string
  readonly server: Hostplane
  readonly urls: Record<string, string>
  readonly measured: Record<string, { cpu: number[]; main: number[]; other: number[]; git: number[]; wall: number[] }>
}

const main = async () => {
  const tempDir = await makeTempDir("hostplane-bench-git-ab-")
  log(
    `${sizeMiB} MiB of content, ${clones} clones per server and transport (${transports.join(", ")}) after ` +
      `${warmup} unmeasured`
  )
  const { source } = await sourceRepository(tempDir, sizeMiB)
  const { keyFile, sshEnv } = await sshKey(tempDir)

  const start = async (name: string, entry?: string): Promise<Side> => {
    const dir = Path.join(tempDir, name)
    Fs.mkdirSync(dir)
    const server = await startHostplane(dir, {}, entry)
    const urls = await serveRepository(server, source, keyFile)
    const empty = () => ({ cpu: [], main: [], other: [], git: [], wall: [] })
    return {
      name,
      server,
      urls: { http: urls.http, ssh: urls.ssh },
      measured: { http: empty(), ssh: empty() }
    }
  }
  const sides = [await start("baseline", baselineEntry), await start("this tree")]
  // The background repack after each push, and the start's own garbage, settle before measuring.
  await sleep(5000)

  // A fresh server's first clones cost it far more collector time (its heap still holds the start's garbage, and
  // V8 has not yet grown its limits): about 0.35 s of helper-thread CPU per SSH clone against 0.13 s once settled.
  /** One clone; its wall seconds (the copy's removal after it not included). */
  const clone = async (side: Side, transport: string) => {
    const target = Path.join(tempDir, "clone")
    const started = performance.now()
    await git(tempDir, ["clone", "-q", "--bare", "--no-local", side.urls[transport]!, target], sshEnv)
    const seconds = (performance.now() - started) / 1000
    Fs.rmSync(target, { recursive: true, force: true })
    return seconds
  }
  for (let turn = 0; turn < warmup; turn++) {
    for (const transport of transports) for (const side of sides) await clone(side, transport)
  }

  for (const transport of transports) {
    for (let turn = 0; turn < clones; turn++) {
      for (const side of turn % 2 === 0 ? sides : [...sides].reverse()) {
        await sleep(300)
        const pid = side.server.child.pid
        const before = { process: serverProcessCpu(pid)!, threads: threadCpu(pid) }
        const wall = await clone(side, transport)
        const after = { process: serverProcessCpu(pid)!, threads: threadCpu(pid) }
        const m = side.measured[transport]!
        m.cpu.push(after.process.own - before.process.own)
        m.git.push(after.process.children - before.process.children)
        m.main.push(after.threads.main - before.threads.main)
        m.other.push(after.threads.other - before.threads.other)
        m.wall.push(wall)
      }
    }
    for (const side of sides) {
      const m = side.measured[transport]!
      console.log(
        `${transport} ${side.name.padEnd(9)}: server CPU per clone median ${round(median(m.cpu), 2)} s ` +
          `(main thread ${round(median(m.main), 2)} s, other threads mean ${round(mean(m.other), 3)} s), ` +
          `its git ${round(median(m.git), 2)} s, wall median ${round(median(m.wall), 2)} s`
      )
    }
    const [baseline, tree] = sides.map((side) => median(side.measured[transport]!.cpu)) as [number, number]
    console.log(`${transport} server CPU per clone, this tree / baseline: ${round(tree / baseline, 2)}x`)
  }
  console.log(loadLine())
}

await runBench(main, timeoutS)
