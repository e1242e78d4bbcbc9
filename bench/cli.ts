// `npm run bench:cli -- [--runs <n>] [--node <path>] [--timeout <s>] [--save]`
//
// The CLI's start-up as a user meets it: wall time of `hostplane --version` and of `hostplane projects list` against
// the real server, each beside `node -e 0` (the floor no Node program goes under) in the same run, interleaved so
// the machine's load weighs on all three alike. The CLI runs on the machine's own Node (the first `node` on PATH
// outside node_modules, Node 20 here) unless --node names one. Prints medians, ratios and the load average.
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { log, makeTempDir, parseOptions, repoRoot, runBench, startHostplane } from "./support/harness.ts"
import { alignColumns, gitCommit, loadLine, machine, spread, writeReport } from "./support/report.ts"

const usage = `usage: npm run bench:cli -- [options]
  --runs <n>          runs of each command (default 15)
  --node <path>       the Node that runs the CLI (default: the machine's own, first on PATH outside node_modules)
  --timeout <s>       abort everything after this many seconds (default 600)
  --save              write the JSON result to bench/results/ instead of the system temp dir`

const { values: parsed, fail } = parseOptions(usage, {
  runs: { type: "string" },
  node: { type: "string" },
  timeout: { type: "string" },
  save: { type: "boolean", default: false }
})
const runs = parsed.runs === undefined ? 15 : Number(parsed.runs)
if (!Number.isInteger(runs) || runs < 1) fail(`invalid --runs ${parsed.runs}`)
const timeoutS = parsed.timeout === undefined ? 600 : Number(parsed.timeout)
if (!Number.isFinite(timeoutS) || timeoutS <= 0) fail(`invalid --timeout ${parsed.timeout}`)

const systemNode = () =>
  (process.env.PATH ?? "")
    .split(Path.delimiter)
    .filter((dir) => dir !== "" && !dir.includes("node_modules"))
    .map((dir) => Path.join(dir, "node"))
    .find((file) => Fs.existsSync(file))
const node = parsed.node ?? systemNode() ?? fail("no node on PATH outside node_modules: pass --node")
const bin = Path.join(repoRoot, "packages/cli/bin/hostplane.js")
if (!Fs.existsSync(Path.join(repoRoot, "packages/cli/dist/hostplane.cjs"))) {
  fail("packages/cli/dist/hostplane.cjs is missing: run npm ci (or npm run bundle -w @hostplane/cli)")
}

/** One run's wall time in ms; a non-zero exit stops the bench (a failing command measures nothing). */
/** The same request `projects list` makes, from this process: what the server itself takes. */
const requestMs = async (url: string, token: string) => {
  const started = process.hrtime.bigint()
  const reply = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
  await reply.arrayBuffer()
  if (reply.status !== 200) throw new Error(`GET ${url} answered ${reply.status}`)
  return Number(process.hrtime.bigint() - started) / 1e6
}

/** GNU time, when the machine has it: each run's CPU (user + system), steadier than wall time on a loaded machine. */
const gnuTime = Fs.existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined
const cpu: Record<string, Array<number>> = {}

/** One run's wall time in ms (and its CPU time in ms under `name`); a non-zero exit stops the bench. */
const timed = (name: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv) => {
  const [command, commandArgs] =
    gnuTime === undefined ? [node, args] : [gnuTime, ["-f", "hostplane-bench-cpu %U %S", node, ...args]]
  const started = process.hrtime.bigint()
  const ran = spawnSync(command, commandArgs, { env, encoding: "utf8" })
  const ms = Number(process.hrtime.bigint() - started) / 1e6
  if (ran.status !== 0) throw new Error(`${args.join(" ")} exited ${ran.status}: ${ran.stderr.trim().slice(0, 400)}`)
  const used = /hostplane-bench-cpu ([\d.]+) ([\d.]+)\s*$/.exec(ran.stderr)
  if (used !== null) (cpu[name] ??= []).push((Number(used[1]) + Number(used[2])) * 1000)
  return ms
}

const main = async () => {
  const tempDir = await makeTempDir("hostplane-bench-cli-")
  const { base, token } = await startHostplane(tempDir)
  const version = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim()
  const env = {
    PATH: process.env.PATH,
    HOME: tempDir,
    HOSTPLANE_URL: base,
    HOSTPLANE_TOKEN: token,
    HOSTPLANE_CONFIG_DIR: Path.join(tempDir, "config")
  }
  const org = JSON.parse(spawnSync(node, [bin, "orgs", "list", "--json"], { env, encoding: "utf8" }).stdout).items[0]
    .slug as string
  const commands = {
    "node -e 0": ["-e", "0"],
    "hostplane --version": [bin, "--version"],
    "hostplane projects list": [bin, "projects", "list", "--org", org],
    "hostplane projects list, no code cache": [bin, "projects", "list", "--org", org]
  }
  // The same command compiled from source every time (the CLI's code cache off): what the cache saves, side by side.
  const envOf = (name: string) => (name.endsWith("no code cache") ? { ...env, HOSTPLANE_CACHE_DIR: "off" } : env)
  log(`CLI on ${node} (${version}); ${runs} runs of each, interleaved; ${loadLine()}`)
  // One warm-up of each: the first run reads the files from disk.
  for (const [name, args] of Object.entries(commands)) timed(`${name} (warm-up)`, args, envOf(name))
  for (const name of Object.keys(cpu)) delete cpu[name]
  const times: Record<string, Array<number>> = Object.fromEntries(Object.keys(commands).map((name) => [name, []]))
  const server = "the server alone (GET .../projects, no CLI)"
  times[server] = []
  const projectsUrl = `${base}/v1/orgs/${org}/projects`
  await requestMs(projectsUrl, token)
  for (let run = 0; run < runs; run++) {
    for (const [name, args] of Object.entries(commands)) times[name]!.push(timed(name, args, envOf(name)))
    times[server]!.push(await requestMs(projectsUrl, token))
  }
  const floor = spread(times["node -e 0"]!).median
  const goals: Record<string, number> = { "hostplane --version": 300, "hostplane projects list": 600 }
  const rows = Object.entries(times).map(([name, values]) => {
    const { min, median, max } = spread(values)
    const goal = goals[name]
    const used = cpu[name]
    return [
      name,
      `${median.toFixed(0)} ms`,
      `${min.toFixed(0)}-${max.toFixed(0)} ms`,
      `${(median / floor).toFixed(2)}x`,
      used === undefined ? "" : `${spread(used).median.toFixed(0)} ms`,
      goal === undefined ? "" : `${goal} ms: ${median <= goal ? "met" : "missed"}`
    ]
  })
  console.log("")
  for (const line of alignColumns([["command", "median", "range", "vs node -e 0", "CPU (median)", "goal"], ...rows]))
    console.log(line)
  console.log(`\n${loadLine()} (at the end; ${node} ${version})`)
  const report = {
    date: new Date().toISOString(),
    commit: gitCommit(),
    machine: machine(),
    cliNode: version,
    runs,
    times,
    cpu
  }
  await writeReport("cli", report, parsed.save === true)
}

await runBench(main, timeoutS)
