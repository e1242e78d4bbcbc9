// `npm run bench:logs -- [--batches <n>] [--batch <n>] [--reads <n>]` (`--reads 0`: the inserts only)
//
// The runtime log store on a scratch embedded PostgreSQL (durable, as a server's): the CPU of the cluster's processes
// and of this process per invocation event over `--batches` inserts of `--batch` hello-world events (the collector
// writes up to 500 at a time), then the reads of a project holding 10,000 events (the retention's count), recorded 500
// and 1 at a time: the first page, the fifth page, a page filtered on a rare outcome, a stream's resume from the oldest
// event (its whole backlog, 500 at a time) and from near the newest, and the lookup of a live batch's 50 ids, each as
// the CPU it costs this process and PostgreSQL (the machine is often shared: wall time would measure the others). Run it
// from another checkout (copy the file into its bench/) for the same figures of that checkout's store. See README.md.
import { layer as pgStores, PgDatabase } from "@hostplane/adapters-pg"
import * as EmbeddedPostgres from "@hostplane/adapters-pg/embedded/EmbeddedPostgres"
import { Kernel, Logs } from "@hostplane/core"
import { givenProject } from "@hostplane/testkit/contract/Fixtures"
import { Effect, Layer, Option } from "effect"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { parseArgs } from "node:util"

const { values } = parseArgs({
  options: { batches: { type: "string" }, batch: { type: "string" }, reads: { type: "string" } }
})
const batches = Number(values.batches ?? 40)
const batchSize = Number(values.batch ?? 500)
const reads = Number(values.reads ?? 20)
const tick = 100 // clock ticks per second of /proc/<pid>/stat (Linux's USER_HZ)

/** CPU seconds of the cluster: the postmaster, its live children, and the children it has reaped. */
const clusterCpu = (postmaster: number): number => {
  let ticks = 0
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try {
      stat = Fs.readFileSync(`/proc/${entry}/stat`, "utf8")
    } catch {
      continue
    }
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const pid = Number(entry)
    if (pid === postmaster) ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])
    else if (Number(fields[1]) === postmaster) ticks += Number(fields[11]) + Number(fields[12])
  }
  return ticks / tick
}

const processCpu = () => {
  const usage = process.cpuUsage()
  return (usage.user + usage.system) / 1e6
}

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
const batchId = () => `log_${Array.from(randomBytes(20), (byte) => alphabet[byte % 62]).join("")}`

/** A batch of hello-world events as `RuntimeLogs.recordAll` makes them: one random id, each event's place appended. */
const helloBatch = (projectId: Kernel.ProjectId, size: number, outcome = (_: number): Logs.LogOutcome => "ok") => {
  const batch = batchId()
  const timestamp = new Date().toISOString()
  return Array.from({ length: size }, (_, index): Logs.LogEventRow => ({
    projectId,
    event: {
      id: Kernel.makeId("log", `${batch}${index.toString(36).padStart(4, "0")}`),
      deploymentId: "dep_0123456789abcdefghij",
      timestamp,
      outcome: outcome(index),
      request: { method: "GET", url: "http://hello.apps.localhost:8081/" },
      response: { status: 200 },
      durationMs: 0,
      logs: [],
      exceptions: [],
      truncated: false
    }
  }))
}

/**
 * CPU ms of `effect` (this process and the cluster's processes: on a shared machine wall time measures the others),
 * the mean over `reads` runs after one unmeasured.
 */
const cpuOf =
  (postmaster: number) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.gen(function* () {
      yield* effect
      const cluster0 = clusterCpu(postmaster)
      const own0 = processCpu()
      for (let run = 0; run < reads; run++) yield* effect
      const own = ((processCpu() - own0) * 1e3) / reads
      const cluster = ((clusterCpu(postmaster) - cluster0) * 1e3) / reads
      return `${(own + cluster).toFixed(1)} (${own.toFixed(1)} + ${cluster.toFixed(1)})`
    })

const program = Effect.gen(function* () {
  const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-bench-logs-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true })))
  const cluster = yield* EmbeddedPostgres.start({ directory })
  const postmaster = Number(Fs.readFileSync(Path.join(cluster.dataDirectory, "postmaster.pid"), "utf8").split("\n")[0])
  const client = PgDatabase.layer(cluster.url)
  const timed = cpuOf(postmaster)
  yield* Effect.gen(function* () {
    const logs = yield* Logs.LogStore
    const busy = yield* givenProject
    for (let warm = 0; warm < 5; warm++) yield* logs.insert(helloBatch(busy.id, batchSize))
    const prepared = Array.from({ length: batches }, () => helloBatch(busy.id, batchSize))
    const cpu0 = clusterCpu(postmaster)
    const own0 = processCpu()
    const start = performance.now()
    for (const rows of prepared) yield* logs.insert(rows)
    const wall = performance.now() - start
    const events = batches * batchSize
    const load = Os.loadavg().map((value) => value.toFixed(1))
    console.log(
      `insert: ${events} events in ${batches} batches of ${batchSize}: PostgreSQL ` +
        `${(((clusterCpu(postmaster) - cpu0) * 1e6) / events).toFixed(1)} µs of CPU per event, this process ` +
        `${(((processCpu() - own0) * 1e6) / events).toFixed(1)} µs, wall ${((wall * 1e3) / events).toFixed(1)} µs ` +
        `(load ${load.join(" ")})`
    )

    // `--reads 0`: the inserts alone (for a profile of their path).
    for (const size of reads > 0 ? [500, 1] : []) {
      const project = yield* givenProject
      const recorded: Array<Kernel.LogEventId> = []
      for (let batch = 0; batch < 10_000 / size; batch++) {
        // One event in a hundred an exception: what a filtered page looks for.
        const rows = helloBatch(project.id, size, (index) => ((batch * size + index) % 100 === 0 ? "exception" : "ok"))
        yield* logs.insert(rows)
        recorded.push(...rows.map((row) => row.event.id))
      }
      const since = new Date(Date.now() - 24 * 3600_000).toISOString()
      const first = yield* logs.list(project.id, { limit: 51, since })
      let before: Logs.LogListQuery["before"]
      for (let page = 0; page < 4; page++) {
        const events = yield* logs.list(project.id, { limit: 51, since, before })
        const last = events.at(-2)!
        before = { createdAt: last.timestamp, id: last.id }
      }
      const backlog = Effect.gen(function* () {
        let after = recorded[0]!
        let count = 0
        for (;;) {
          const page = yield* logs.after(project.id, after, 500)
          if (Option.isNone(page) || page.value.length === 0) break
          count += page.value.length
          after = Kernel.makeId("log", page.value.at(-1)!.id)
        }
        if (count !== recorded.length - 1) throw new Error(`resumed ${count} events of ${recorded.length - 1}`)
      })
      if (first.length !== 51) throw new Error(`a first page of ${first.length} events`)
      console.log(
        `reads at 10,000 events recorded ${size} at a time (CPU ms, this process + PostgreSQL, mean of ${reads}): first page ` +
          `${yield* timed(logs.list(project.id, { limit: 51, since }))}, fifth page ` +
          `${yield* timed(logs.list(project.id, { limit: 51, since, before }))}, exceptions page ` +
          `${yield* timed(logs.list(project.id, { limit: 51, since, outcome: "exception" }))}, resume from the oldest ` +
          `(10,000 events) ${yield* timed(backlog)}, resume 50 from the newest ` +
          `${yield* timed(logs.after(project.id, recorded.at(-51)!, 500))}, 50 ids ` +
          `${yield* timed(logs.byIds(project.id, recorded.slice(-50)))}`
      )
    }
  }).pipe(Effect.provide(pgStores.pipe(Layer.provideMerge(client))))
})

Effect.runPromise(Effect.scoped(program)).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  }
)
