// The paired runs of the request benchmarks (bench/me.ts, bench/write.ts): every server loaded one after the other,
// `runs` times; the medians per server with each server's CPU per request, and the ratios with min/median/max. One
// copy for both benches. Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import * as Fs from "node:fs"
import * as Os from "node:os"
import { hasProc, log, round } from "./harness.ts"
import { type LoadOptions, type Measurement, measure, type Target } from "./load.ts"
import { alignColumns, formatRatio, loadLine, spread } from "./report.ts"

/** One paired run: every server's measurement, loaded one after the other, and the load average after them. */
export interface PairedRun {
  readonly results: Record<string, Measurement>
  readonly loadAverage: ReadonlyArray<number>
  /** Per server, the share of the machine's CPU time its hypervisor gave to others during its load (warm-up too). */
  readonly stealPercent: Record<string, number | null>
}

/** The machine's total and stolen CPU time so far (/proc/stat's first line, in ticks); undefined off Linux. */
const cpuTicks = (): { total: number; steal: number } | undefined => {
  if (!hasProc) return undefined
  const fields = Fs.readFileSync("/proc/stat", "utf8").split("\n", 1)[0].trim().split(/\s+/).slice(1).map(Number)
  // user nice system idle iowait irq softirq steal (guest time is already inside user and nice)
  return { total: fields.slice(0, 8).reduce((sum, value) => sum + value, 0), steal: fields[7] ?? 0 }
}

/** `measure`, and the share of CPU time stolen by the hypervisor meanwhile (a VM's speed drops with it). */
const measureWithSteal = async (target: Target, load: LoadOptions) => {
  const before = cpuTicks()
  const measurement = await measure(target, load)
  const after = cpuTicks()
  const steal =
    before === undefined || after === undefined || after.total === before.total
      ? null
      : round((100 * (after.steal - before.steal)) / (after.total - before.total), 1)
  return { measurement, steal }
}

/** The machine and the options, first thing: a warning when the load average at the start exceeds the cores. */
export const logStart = (
  loadAtStart: ReadonlyArray<number>,
  options: {
    readonly durationS: number
    readonly warmupS: number
    readonly connections: number
    readonly timeoutS: number
  }
) => {
  const { durationS, warmupS, connections, timeoutS } = options
  if (loadAtStart[0] > Os.cpus().length) {
    log(
      `warning: load average ${loadAtStart[0]} on ${Os.cpus().length} CPUs: the machine is busy, expect noisy numbers`
    )
  }
  log(
    `node ${process.version}, ${Os.cpus().length} CPUs; ${durationS} s per server after ${warmupS} s warm-up, ${connections} connections; time bound ${timeoutS} s`
  )
}

/**
 * `runs` times, each target loaded with `load` one after the other (never two at once): in the order given on odd
 * runs and reversed on even ones, so that neither server always follows the other's load (a write bench leaves
 * dead rows and autovacuum work behind it) or always meets the same phase of a drifting machine.
 */
export const runPaired = async (
  targets: ReadonlyArray<Target>,
  runs: number,
  load: LoadOptions
): Promise<Array<PairedRun>> => {
  const paired: Array<PairedRun> = []
  for (let run = 1; run <= runs; run++) {
    const results: Record<string, Measurement> = {}
    const stealPercent: Record<string, number | null> = {}
    for (const target of run % 2 === 1 ? targets : [...targets].reverse()) {
      const { measurement, steal } = await measureWithSteal(target, load)
      results[target.name] = measurement
      stealPercent[target.name] = steal
    }
    const loadAverage = Os.loadavg().map((value) => round(value, 2))
    paired.push({ results, loadAverage, stealPercent })
    const each = targets.map(
      (t) => `${t.name} ${Math.round(results[t.name].requestsPerSecond)} req/s (steal ${stealPercent[t.name] ?? "?"}%)`
    )
    log(`run ${run}/${runs}: ${each.join(", ")}; ${loadLine()}`)
  }
  return paired
}

/**
 * Server and database CPU per request, in microseconds. `withoutDatabase` is what a missing database figure counts
 * as: 0 for a server that has no database (bench/me.ts's bare and floor), NaN (the default) where it should have been
 * measured.
 */
export const cpuPerRequest = (m: Measurement, withoutDatabase = Number.NaN) =>
  (m.cpu.serverUsPerRequest ?? Number.NaN) + (m.cpu.databaseUsPerRequest ?? withoutDatabase)

const fixed = (value: number | null, digits: number) =>
  value === null || !Number.isFinite(value) ? "n/a" : value.toFixed(digits)

/** The medians of the paired runs, one aligned row per server in `names`, below a header. */
export const medianTable = (paired: ReadonlyArray<PairedRun>, names: ReadonlyArray<string>): Array<string> => {
  const median = (name: string, pick: (m: Measurement) => number | null) =>
    spread(paired.map((p) => pick(p.results[name]) ?? Number.NaN)).median
  const sum = (name: string, pick: (m: Measurement) => number) =>
    String(paired.reduce((total, p) => total + pick(p.results[name]), 0))
  const row = (name: string) => [
    name,
    fixed(
      median(name, (m) => m.requestsPerSecond),
      0
    ),
    fixed(
      median(name, (m) => m.latencyMs.p50),
      2
    ),
    fixed(
      median(name, (m) => m.latencyMs.p99),
      2
    ),
    sum(name, (m) => m.non2xx),
    sum(name, (m) => m.errors + m.timeouts + m.mismatches),
    fixed(Math.max(...paired.map((p) => p.results[name].memory.peakRssMiB ?? 0)), 1),
    fixed(
      median(name, (m) => m.cpu.serverUsPerRequest),
      0
    ),
    fixed(
      median(name, (m) => m.cpu.databaseUsPerRequest),
      0
    ),
    fixed(
      median(name, (m) => m.cpu.clientUsPerRequest),
      0
    )
  ]
  const header = [
    "",
    "req/s",
    "p50 ms",
    "p99 ms",
    "non-2xx",
    "errors",
    "peak RSS MiB",
    "server CPU µs/req",
    "PostgreSQL CPU µs/req",
    "client CPU µs/req"
  ]
  return alignColumns([header, ...names.map(row)])
}

/** A ratio line: `hostplane/fastify req/s  1.02x (min …, max … over 3 paired runs)`, labels in one column. */
export const ratioLine = (label: string, ratios: ReadonlyArray<number>, note?: string) =>
  `${label.padEnd(25)}${formatRatio(ratios)}${note === undefined ? "" : ` ${note}`}`

/** The note of a CPU ratio line. */
export const cpuNote = "per request, server and PostgreSQL (lower is better)"

/**
 * Prints `title`, the medians table of `names` and a rule, the ratio lines (`[label, ratios, note?]`), then the
 * load average after each paired run and now, and the CPU time the hypervisor stole during each server's load.
 */
export const printRequestTable = (
  title: string,
  paired: ReadonlyArray<PairedRun>,
  names: ReadonlyArray<string>,
  ratios: ReadonlyArray<readonly [string, ReadonlyArray<number>, string?]>
) => {
  const lines = medianTable(paired, names)
  console.log(`\n${title}`)
  for (const line of lines) console.log(line)
  console.log("-".repeat(lines[0].length))
  for (const [label, values, note] of ratios) console.log(ratioLine(label, values, note))
  console.log(`load average after each run: ${paired.map((p) => p.loadAverage.join(" ")).join(" | ")}; ${loadLine()}`)
  const steal = (p: PairedRun) => names.map((name) => `${name} ${p.stealPercent[name] ?? "?"}`).join(", ")
  console.log(`CPU time stolen by the hypervisor per run, %: ${paired.map(steal).join(" | ")}`)
}
