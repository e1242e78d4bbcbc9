import * as Fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll } from "vitest"

/**
 * With HOSTPLANE_TEST_CPU_LOG set to a file, appends one JSON line per test file: its wall time, the CPU its vitest
 * worker spent on it, and the CPU of the child processes the worker reaped meanwhile (servers, CLIs, git, workerd a
 * file started and stopped). Summed per file, it says where a whole run's CPU goes, which the times of files running
 * three at once cannot. Clusters PostgreSQL daemonizes are nobody's children and are not counted.
 */
const log = process.env["HOSTPLANE_TEST_CPU_LOG"]

/** This process's reaped children's CPU milliseconds (cutime + cstime of /proc/self/stat). */
const childrenCpuMs = () => {
  const fields = Fs.readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ")
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100
}

if (log !== undefined && log !== "") {
  let start: { wall: number; self: NodeJS.CpuUsage; children: number } | undefined
  let file = ""
  beforeAll(({}, suite) => {
    file = Path.relative(process.cwd(), ("filepath" in suite ? suite.filepath : suite.file?.filepath) ?? "")
    start = { wall: performance.now(), self: process.cpuUsage(), children: childrenCpuMs() }
  })
  afterAll(() => {
    if (start === undefined) return
    const self = process.cpuUsage(start.self)
    const line = {
      file,
      wallS: Math.round(performance.now() - start.wall) / 1000,
      workerCpuS: Math.round((self.user + self.system) / 1000) / 1000,
      childrenCpuS: Math.round(childrenCpuMs() - start.children) / 1000,
      pid: process.pid
    }
    Fs.appendFileSync(log, JSON.stringify(line) + "\n")
  })
}
