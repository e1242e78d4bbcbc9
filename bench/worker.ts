// `npm run bench:worker -- [--seconds <s>] [--runs <n>] [--projects <n>] [--throughput-only] [--baseline <checkout>]
//   [--timeout <s>]`
//
// Worker code through the real server (npm start's binary), in one run: requests/s of a hello-world worker through the
// edge beside the same worker served by a bare workerd with a static config (50 connections each, `runs` paired runs
// in alternating order after an unmeasured warm-up; the medians, the ratio and CPU per request of each side printed);
// deploy-to-serving latency over 20 deploys (p50, p95); failed requests during 10 deploys and rollbacks under load;
// the RSS of the node (the server process plus its workerd processes) with many projects, each with a hello-world
// worker requested once. With `--baseline`, a second server from another checkout serves the same worker beside it and
// takes its turn in every run: the server's own CPU per request of the two trees, side by side in one run (the figure a
// change to the edge's path is judged by on a shared machine). Runs directly on Node 22 type stripping: erasable
// TypeScript syntax only.
import autocannon from "autocannon"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { bundleOf, manifestEntry } from "@hostplane/testkit"
import { workerdBinary } from "@hostplane/node"
import { Effect } from "effect"
import {
  cpuSeconds,
  freePort,
  log,
  makeTempDir,
  parseOptions,
  request,
  round,
  rssKiB,
  runBench,
  statusKiB,
  sleep,
  startHostplane
} from "./support/harness.ts"

const usage = `usage: npm run bench:worker -- [options]
  --seconds <s>       seconds of load per throughput target and run (default 10)
  --runs <n>          paired throughput runs, edge and bare one after the other, order alternating (default 3)
  --warmup <s>        unmeasured load on each side before the runs (default 10: the edge's first seconds still run
                      cold code, and its first run came out lowest with 3)
  --projects <n>      projects for the memory figure (default 100)
  --throughput-only   measure the throughput only (no deploy latency, deploys under load or memory)
  --baseline <dir>    also the server of this checkout (git worktree add, its node_modules), in every run: an A/B
  --rate <n>          throughput runs at this many requests/s (all connections together) instead of as fast as each
                      target goes: every target then does the same work per second, so its fixed costs per second
                      weigh the same in its CPU per request (the steadier figure for an A/B of two trees)
  --timeout <s>       abort everything after this many seconds (default 900)`

const { values: parsed, fail } = parseOptions(usage, {
  seconds: { type: "string" },
  runs: { type: "string" },
  warmup: { type: "string" },
  projects: { type: "string" },
  "throughput-only": { type: "boolean" },
  baseline: { type: "string" },
  rate: { type: "string" },
  timeout: { type: "string" }
})
const seconds = Number(parsed.seconds ?? "10")
const runs = Number(parsed.runs ?? "3")
const warmup = Number(parsed.warmup ?? "10")
const projectCount = Number(parsed.projects ?? "100")
const timeoutS = Number(parsed.timeout ?? "900")
const fixedRate = parsed.rate === undefined ? undefined : Number(parsed.rate)
if (fixedRate !== undefined && !(Number.isFinite(fixedRate) && fixedRate > 0)) fail("invalid --rate")
if (![seconds, runs, warmup, projectCount, timeoutS].every((n) => Number.isFinite(n) && n > 0)) fail("invalid option")
const baselineEntry =
  parsed.baseline === undefined ? undefined : Path.resolve(parsed.baseline, "packages/server/src/bin/server.ts")
if (baselineEntry !== undefined && !Fs.existsSync(baselineEntry)) fail(`no server at ${baselineEntry}`)

/** The machine's load average now: a figure taken at a load of 10 on 2 cores is not one taken at 1. */
const loadNow = () =>
  Os.loadavg()
    .map((value) => round(value, 2))
    .join(" ")

/** The machine's busy and total CPU time so far (all cores, clock ticks): idle and iowait are the time not busy. */
const machineTicks = () => {
  const ticks = Fs.readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!.trim().split(/\s+/).slice(1, 9).map(Number)
  const total = ticks.reduce((sum, one) => sum + one, 0)
  return { busy: total - ticks[3]! - ticks[4]!, total }
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

const hello = (tag: string) => `export default { fetch() { return new Response(${JSON.stringify(`hello ${tag}`)}) } }`

const bundle = (tag: string) =>
  Effect.runPromise(bundleOf([manifestEntry({ name: "bench" }), { name: "worker/index.js", content: hello(tag) }]))

interface CannonResult {
  readonly requests: { readonly average: number; readonly total: number }
  readonly non2xx: number
  readonly errors: number
  readonly timeouts: number
}

const cannon = (url: string, host: string | undefined, connections: number, durationS: number, rate?: number) =>
  new Promise<CannonResult>((resolve, reject) => {
    ;(autocannon as unknown as (o: object, done: (e: Error | null, r: CannonResult) => void) => unknown)(
      {
        url,
        connections,
        duration: durationS,
        headers: host === undefined ? {} : { host },
        ...(rate === undefined ? {} : { overallRate: rate })
      },
      (error, result) => (error ? reject(error) : resolve(result))
    )
  })

/** The pids under `pid`, itself included. */
const treeOf = (pid: number): Array<number> => {
  const children = new Map<number, Array<number>>()
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = Fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)])
    } catch {
      // gone meanwhile
    }
  }
  const out: Array<number> = []
  const walk = (p: number) => {
    out.push(p)
    for (const child of children.get(p) ?? []) walk(child)
  }
  walk(pid)
  return out
}
const commOf = (pid: number) => {
  try {
    return Fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim()
  } catch {
    return ""
  }
}

/** The hot shard's workerd (its config is named hot-<generation>.capnp): a hot project is served there. */
const isHotProcess = (pid: number) => {
  try {
    return /hot-\d+\.capnp/.test(Fs.readFileSync(`/proc/${pid}/cmdline`, "utf8"))
  } catch {
    return false
  }
}

const percentile = (values: Array<number>, q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}

await runBench(async () => {
  const dir = await makeTempDir("hostplane-bench-worker-")
  /** A server of one checkout, with the calls the bench makes on it. */
  const serve = async (subdir: string, entry?: string) => {
    const at = Path.join(dir, subdir)
    Fs.mkdirSync(at, { recursive: true })
    const edgePort = await freePort()
    const server = await startHostplane(at, { SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}` }, entry)
    const edge = `http://127.0.0.1:${edgePort}`
    const auth = { authorization: `Bearer ${server.token}` }
    const json = { ...auth, "content-type": "application/json" }
    let orgIndex = 0
    const newOrg = async () => {
      const slug = `bench-${++orgIndex}-${Date.now().toString(36)}`
      const reply = await request("POST", `${server.base}/v1/orgs`, json, JSON.stringify({ name: slug, slug }))
      if (reply.status !== 201) throw new Error(`org create answered ${reply.status}`)
      return slug
    }
    const newProject = async (slug: string, name: string) => {
      const reply = await request("POST", `${server.base}/v1/orgs/${slug}/projects`, json, JSON.stringify({ name }))
      if (reply.status !== 201) throw new Error(`project create answered ${reply.status}: ${reply.body}`)
      return JSON.parse(reply.body.toString("utf8")) as { hostname: string }
    }
    const deploy = async (slug: string, name: string, tag: string) => {
      const body = await bundle(tag)
      const reply = await fetch(`${server.base}/v1/orgs/${slug}/projects/${name}/deployments`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/gzip" },
        body
      })
      if (reply.status !== 201) throw new Error(`deploy answered ${reply.status}: ${await reply.text()}`)
      return ((await reply.json()) as { id: string }).id
    }
    const edgeText = async (host: string) => {
      const reply = await request("GET", `${edge}/`, { host })
      return reply.status === 200 ? reply.body.toString("utf8") : `status ${reply.status}`
    }
    return { server, edge, json, newOrg, newProject, deploy, edgeText }
  }
  const candidate = await serve(".")
  const { server, edge, json, newOrg, newProject, deploy, edgeText } = candidate
  const baseline = baselineEntry === undefined ? undefined : await serve("baseline", baselineEntry)

  // 1. Throughput: one hello-world worker through the edge, the same module in a bare workerd.
  const org = await newOrg()
  const { hostname } = await newProject(org, "hello")
  await deploy(org, "hello", "v0")
  if ((await edgeText(hostname)) !== "hello v0") throw new Error("the worker does not answer through the edge")
  const bareDir = Path.join(dir, "bare")
  Fs.mkdirSync(bareDir)
  const barePort = await freePort()
  Fs.writeFileSync(Path.join(bareDir, "hello.js"), hello("v0"))
  Fs.writeFileSync(
    Path.join(bareDir, "config.capnp"),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "hello", worker = (modules = [ (name = "hello.js", esModule = embed "hello.js") ], compatibilityDate = "2026-11-01")) ],
  sockets = [ (name = "http", address = "127.0.0.1:${barePort}", http = (), service = "hello") ],
);
`
  )
  const bare = spawn(workerdBinary(), ["serve", "config.capnp"], { cwd: bareDir, stdio: "ignore" })
  try {
    for (let i = 0; i < 100; i++) {
      const ok = await request("GET", `http://127.0.0.1:${barePort}/`).then(
        (r) => r.status === 200,
        () => false
      )
      if (ok) break
      await sleep(100)
    }
    // The CPU of each side per answered request: the edge's is the server process and its workerd processes, the
    // bare side's its one workerd (a busy machine moves CPU per request less than it moves the rates).
    const workerdCpuOf =
      (pid: number) =>
      (only: (pid: number) => boolean = () => true) =>
        treeOf(pid)
          .filter((one) => commOf(one) === "workerd" && only(one))
          .reduce((sum, one) => sum + (cpuSeconds(one) ?? 0), 0)
    // Its embedded PostgreSQL's processes (the invocation events' inserts), counted beside the edge's CPU, not in it.
    const postgresCpuOf = (pid: number) => () =>
      treeOf(pid)
        .filter((one) => commOf(one) === "postgres")
        .reduce((sum, one) => sum + (cpuSeconds(one, true) ?? 0), 0)
    const edgeTarget = (at: typeof candidate, host: string) => {
      const workerd = workerdCpuOf(at.server.child.pid)
      return {
        url: `${at.edge}/`,
        host,
        cpu: () => (cpuSeconds(at.server.child.pid) ?? 0) + workerd(),
        workerd,
        postgres: postgresCpuOf(at.server.child.pid)
      }
    }
    const targets: Record<
      string,
      {
        url: string
        host: string | undefined
        cpu: () => number
        workerd: ((only?: (pid: number) => boolean) => number) | undefined
        postgres?: () => number
      }
    > = {
      edge: edgeTarget(candidate, hostname),
      bare: {
        url: `http://127.0.0.1:${barePort}/`,
        host: undefined,
        cpu: () => cpuSeconds(bare.pid ?? 0) ?? 0,
        workerd: undefined
      }
    }
    if (baseline !== undefined) {
      const baseOrg = await baseline.newOrg()
      const baseHost = (await baseline.newProject(baseOrg, "hello")).hostname
      await baseline.deploy(baseOrg, "hello", "v0")
      if ((await baseline.edgeText(baseHost)) !== "hello v0") throw new Error("the baseline's worker does not answer")
      targets.baseline = edgeTarget(baseline, baseHost)
    }
    const names = Object.keys(targets)
    const measure = async (name: string, durationS: number) => {
      const target = targets[name]!
      const before = target.cpu()
      const workerdBefore = target.workerd?.() ?? 0
      const hotBefore = target.workerd?.(isHotProcess) ?? 0
      const postgresBefore = target.postgres?.() ?? 0
      const machineBefore = machineTicks()
      const generatorBefore = process.cpuUsage()
      const startedAt = performance.now()
      const result = await cannon(target.url, target.host, 50, durationS, fixedRate)
      const elapsedS = (performance.now() - startedAt) / 1_000
      const machineAfter = machineTicks()
      const generator = process.cpuUsage(generatorBefore)
      const perRequest = (seconds: number) =>
        result.requests.total === 0 ? NaN : (seconds * 1e6) / result.requests.total
      return {
        perSecond: result.requests.average,
        cpuUs: perRequest(target.cpu() - before),
        // The edge's workerd processes: the rest of the edge's CPU is its server process.
        workerdUs: target.workerd === undefined ? NaN : perRequest(target.workerd() - workerdBefore),
        // Of which the hot shard's (a hot process replaced within the run counts from zero: a lower bound then).
        hotUs: target.workerd === undefined ? NaN : perRequest(Math.max(0, target.workerd(isHotProcess) - hotBefore)),
        postgresUs: target.postgres === undefined ? NaN : perRequest(target.postgres() - postgresBefore),
        // How much of the machine the run used, and the target's and the load generator's (autocannon, in this
        // process) shares, in cores: a bare workerd serves from one thread, so it cannot use more than one core.
        targetCores: (target.cpu() - before) / elapsedS,
        machineCores:
          ((machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)) * Os.cpus().length,
        generatorCores: (generator.user + generator.system) / 1e6 / elapsedS,
        failed: result.non2xx + result.errors + result.timeouts
      }
    }
    // Warm-up: the JIT, the edge's memos, the shard's isolate, unmeasured.
    for (const name of names) await measure(name, warmup)
    log(`throughput: ${seconds} s at 50 connections each, ${runs} runs over ${names.join(", ")}`)
    type Figures = Awaited<ReturnType<typeof measure>>
    const results: Record<string, Array<Figures>> = Object.fromEntries(names.map((name) => [name, []]))
    const ratios: Array<number> = []
    const serverRatios: Array<number> = []
    const serverUs = (figures: Figures) => figures.cpuUs - figures.workerdUs
    for (let run = 0; run < runs; run++) {
      const order = run % 2 === 0 ? names : [...names].reverse()
      for (const name of order) {
        const figures = await measure(name, seconds)
        results[name]!.push(figures)
        log(
          `run ${run + 1} ${name}: ${round(figures.perSecond, 0)} req/s, ${round(figures.cpuUs, 0)} µs CPU per request` +
            (Number.isNaN(figures.workerdUs)
              ? ""
              : ` (workerd ${round(figures.workerdUs, 0)} µs, of which the hot shard ${round(figures.hotUs, 0)} µs; server ${round(serverUs(figures), 0)} µs; beside them PostgreSQL ${round(figures.postgresUs, 0)} µs)`) +
            `; cores busy: ${name} ${round(figures.targetCores, 2)}, load generator ${round(figures.generatorCores, 2)}, ` +
            `machine ${round(figures.machineCores, 2)} of ${Os.cpus().length}, failed ${figures.failed} (load ${loadNow()})`
        )
      }
      ratios.push(results.edge![run]!.perSecond / results.bare![run]!.perSecond)
      if (baseline !== undefined) serverRatios.push(serverUs(results.edge![run]!) / serverUs(results.baseline![run]!))
    }
    const rate = (name: string) => median(results[name]!.map((one) => one.perSecond))
    const cpu = (name: string) => median(results[name]!.map((one) => one.cpuUs))
    const failed = (name: string) => results[name]!.reduce((sum, one) => sum + one.failed, 0)
    const serverOf = (name: string) => round(median(results[name]!.map(serverUs)), 0)
    console.log(
      `throughput: edge ${round(rate("edge"), 0)} req/s, bare workerd ${round(rate("bare"), 0)} req/s: ` +
        `${round(median(ratios), 2)}x (min ${round(Math.min(...ratios), 2)}x, max ${round(Math.max(...ratios), 2)}x over ${runs} paired runs; goal >= 0.6x); ` +
        `CPU per request edge ${round(cpu("edge"), 0)} µs (server and workerd; workerd ${round(median(results.edge!.map((one) => one.workerdUs)), 0)} µs), bare ${round(cpu("bare"), 0)} µs; ` +
        `failed: edge ${failed("edge")}, bare ${failed("bare")}; load average ${loadNow()} on ${Os.cpus().length} CPUs`
    )
    if (baseline !== undefined) {
      console.log(
        `A/B: the server process's CPU per request, this tree ${serverOf("edge")} µs, baseline ${serverOf("baseline")} µs: ` +
          `${round(median(serverRatios), 2)}x (min ${round(Math.min(...serverRatios), 2)}x, max ${round(Math.max(...serverRatios), 2)}x over ${runs} runs); ` +
          `whole edge ${round(cpu("edge"), 0)} against ${round(cpu("baseline"), 0)} µs, ` +
          `PostgreSQL ${round(median(results.edge!.map((one) => one.postgresUs)), 0)} against ` +
          `${round(median(results.baseline!.map((one) => one.postgresUs)), 0)} µs, ` +
          `${round(rate("edge"), 0)} against ${round(rate("baseline"), 0)} req/s; load average ${loadNow()}`
      )
    }
  } finally {
    bare.kill("SIGKILL")
  }

  if (parsed["throughput-only"] === true) return

  // 2. Deploy to serving: from the upload's start until the edge answers with the new code, 20 times.
  const latencies: Array<number> = []
  for (let i = 1; i <= 20; i++) {
    const started = performance.now()
    await deploy(org, "hello", `v${i}`)
    while ((await edgeText(hostname)) !== `hello v${i}`) await sleep(5)
    latencies.push(performance.now() - started)
  }
  log(
    `deploy to serving over 20 deploys: p50 ${round(percentile(latencies, 0.5), 0)} ms, p95 ${round(percentile(latencies, 0.95), 0)} ms (goal p95 < 1000 ms; load ${loadNow()})`
  )

  // 3. Failed requests while 5 deploys and 5 rollbacks happen under load (20 connections).
  const ids: Array<string> = []
  const during = await cannonAround(edge, hostname, async () => {
    for (let i = 0; i < 5; i++) ids.push(await deploy(org, "hello", `load-${i}`))
    for (let i = 0; i < 5; i++) {
      await request(
        "POST",
        `${server.base}/v1/orgs/${org}/projects/hello/rollback`,
        json,
        JSON.stringify({ deploymentId: ids[i] })
      )
    }
  })
  log(
    `during 5 deploys and 5 rollbacks under load: ${during.total} requests, ${during.failed} failed (non-2xx ${during.non2xx}, errors ${during.errors}, timeouts ${during.timeouts}) (goal 0; load ${loadNow()})`
  )

  // 4. Memory: many projects, each with a hello-world worker requested once.
  let made = 1
  while (made < projectCount) {
    const slug = await newOrg()
    for (let i = 0; i < 3 && made < projectCount; i++, made++) {
      const name = `p${made}`
      const project = await newProject(slug, name)
      await deploy(slug, name, name)
      if ((await edgeText(project.hostname)) !== `hello ${name}`) throw new Error(`${name} does not answer`)
    }
  }
  await sleep(2_000)
  const tree = treeOf(server.child.pid)
  const node = tree.filter((pid) => ["node", "workerd", "bwrap", "setpriv"].includes(commOf(pid)))
  const kib = node.reduce((sum, pid) => sum + (rssKiB(pid) ?? 0), 0)
  const workerds = node.filter((pid) => commOf(pid) === "workerd")
  const workerdKib = workerds.reduce((sum, pid) => sum + (rssKiB(pid) ?? 0), 0)
  const each = workerds.map((pid) => `${round((rssKiB(pid) ?? 0) / 1024, 0)}${isHotProcess(pid) ? " hot" : ""}`)
  // The server's RSS split: anonymous (V8's heap and node's own allocations) and file-backed (the binary's mapped code).
  const serverPart = (field: string) => round((statusKiB(server.child.pid, field) ?? 0) / 1024, 0)
  log(
    `memory with ${projectCount} projects, each requested once: node ${round(kib / 1024, 0)} MiB RSS (server process ${round((rssKiB(server.child.pid) ?? 0) / 1024, 0)} MiB with the API in it, of which anonymous ${serverPart("RssAnon")} and file ${serverPart("RssFile")}, ${workerds.length} workerd ${round(workerdKib / 1024, 0)} MiB: ${each.join(", ")}; PostgreSQL excluded) (goal < 600 MiB; load ${loadNow()})`
  )
}, timeoutS)

/** Load (20 connections) for as long as `during` takes plus a second, then the totals. */
async function cannonAround(edge: string, host: string, during: () => Promise<void>) {
  const instance = (
    autocannon as unknown as (
      o: object,
      done: (e: Error | null, r: CannonResult & { non2xx: number }) => void
    ) => {
      stop: () => void
    }
  )({ url: `${edge}/`, connections: 20, duration: 600, headers: { host } }, (error, result) => {
    if (error) finished.reject(error)
    else finished.resolve(result)
  })
  const finished = Promise.withResolvers<CannonResult>()
  await sleep(1_000)
  await during()
  await sleep(1_000)
  instance.stop()
  const result = await finished.promise
  return {
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    failed: result.non2xx + result.errors + result.timeouts
  }
}
