// The output side of a benchmark: an aligned text table for the terminal, and the JSON report with the machine and
// commit it was measured on. Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { benchDir, repoRoot } from "./harness.ts"

/** The rows as lines of aligned columns: the first left-aligned, the others right-aligned, two spaces apart. */
export const alignColumns = (rows: ReadonlyArray<ReadonlyArray<string>>): Array<string> => {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)))
  return rows.map((row) =>
    row
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column])))
      .join("  ")
      .trimEnd()
  )
}

/** The short hash of HEAD, with `+dirty` when tracked files have changed; null outside a git checkout. */
export const gitCommit = () => {
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

/** Node version, platform and CPUs, for the JSON report. */
export const machine = () => ({
  node: process.version,
  platform: `${Os.platform()} ${Os.release()} ${Os.arch()}`,
  cpus: Os.cpus().length,
  cpuModel: Os.cpus()[0]?.model ?? null
})

/** Writes `report` as `<name>-<date>.json` to bench/results/ (`save`) or the temp dir, and prints the path. */
export const writeReport = async (name: string, report: { readonly date: string }, save: boolean) => {
  const resultsDir = save ? Path.join(benchDir, "results") : Path.join(Os.tmpdir(), "hostplane-bench-results")
  await Fs.promises.mkdir(resultsDir, { recursive: true })
  const resultsFile = Path.join(resultsDir, `${name}-${report.date.replace(/[:.]/g, "-")}.json`)
  await Fs.promises.writeFile(resultsFile, `${JSON.stringify(report, null, 2)}\n`)
  console.log(`\nJSON: ${resultsFile}`)
}

/** The smallest, middle and largest of repeated measurements (the median of an even count is the mean of the two). */
export const spread = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  const median = sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
  return { min: sorted[0], median, max: sorted[sorted.length - 1], runs: sorted.length }
}

/** `0.41x (min 0.38x, max 0.44x over 3 paired runs)`: the median ratio first. */
export const formatRatio = (ratios: ReadonlyArray<number>) => {
  const { min, median, max, runs } = spread(ratios)
  return `${median.toFixed(2)}x (min ${min.toFixed(2)}x, max ${max.toFixed(2)}x over ${runs} paired run${runs === 1 ? "" : "s"})`
}

/** The 1, 5 and 15-minute load averages and the core count, printed beside every figure. */
export const loadLine = () =>
  `load average ${Os.loadavg()
    .map((value) => value.toFixed(2))
    .join(" ")} on ${Os.cpus().length} CPUs`
