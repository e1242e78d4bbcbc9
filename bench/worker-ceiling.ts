// `npm run bench:worker-ceiling -- [--seconds <s>] [--runs <n>] [--warmup <s>] [--timeout <s>]`
//
// What a hello-world worker can reach on this machine in each shape a node could take, beside the bare workerd with a
// static config that `bench/worker.ts` compares the edge to, in one run (50 connections each, `runs` rounds with the
// order rotating, after an unmeasured warm-up). No hostplane server: each peer is the least its shape needs, so its
// ratio is a ceiling for a node built that way.
//   bare            the hello worker alone in a workerd with a static config (the peer of bench:worker)
//   proxy+bare      (A) the edge's hop and nothing else (node HTTP server, undici dispatch to a unix socket, the edge's
//                   header rules) in front of that workerd: a static config per worker, the node's side at its least
//   proxy+tail      A with a tail on the worker (a tail worker batching to a stand-in node, as the shipped router's
//                   Tail does): a static config whose logs come from workerd's tails
//   splice+bare     a connection-level edge (reads the first request head, then copies bytes) in front of that
//                   workerd: what a hop that parses no later request costs
//   hot             the shipped hot shard's config for the hello worker (hotConfig: entry.js in front, the invoke
//                   header parsed into request.cf), with a stand-in node, no node in the request's path
//   splice+hot      that hot shard behind the connection-level hop: a hot project's least cost with such an edge
//   router          (B) one workerd, a router worker forwarding to the hello worker through a static service binding
//                   (the shipped router's header work, no loader, no tail), no node in the path
//   shard           (C) the shipped shard (router.js, the worker loader, entry.js, the tail) with a stand-in node
//                   answering /code and /tails, no node in the request's path
//   proxy+shard     C behind the proxy: the edge's least cost in front of the shipped shard
// With `--ab <git ref>`, also `shard@ref` and `proxy+shard@ref`: the shard with that commit's router.js and entry.js,
// and `hot@ref`, the hot shard with that commit's entry.js: an A/B of a change to either in the same run.
// The ratio of each is its median requests/s over the bare workerd's; CPU per request counts every process of the
// peer (workerd, the proxy, the stand-in node) and is the steadier figure on a shared machine.
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import autocannon from "autocannon"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { workerdBinary } from "@hostplane/node"
import { hotConfig } from "../packages/node/src/runtime/HotShard.ts"
import {
  benchDir,
  cpuSeconds,
  freePort,
  log,
  makeTempDir,
  parseOptions,
  repoRoot,
  request,
  round,
  runBench,
  sleep,
  startChild,
  startProcess
} from "./support/harness.ts"

const usage = `usage: npm run bench:worker-ceiling -- [options]
  --seconds <s>   seconds of load per peer and round (default 6)
  --runs <n>      rounds over every peer, the order rotating (default 3)
  --warmup <s>    unmeasured load on each peer first (default 4)
  --ab <ref>       also the shard with the router.js and entry.js of this git commit, and the hot shard with its
                  entry.js (an A/B in one run)
  --only <peers>  only these peers (comma-separated) beside bare
  --timeout <s>   abort everything after this many seconds (default 600)`

const { values: parsed, fail } = parseOptions(usage, {
  seconds: { type: "string" },
  runs: { type: "string" },
  warmup: { type: "string" },
  ab: { type: "string" },
  only: { type: "string" },
  timeout: { type: "string" }
})
const seconds = Number(parsed.seconds ?? "6")
const runs = Number(parsed.runs ?? "3")
const warmup = Number(parsed.warmup ?? "4")
const timeoutS = Number(parsed.timeout ?? "600")
if (![seconds, runs, warmup, timeoutS].every((n) => Number.isFinite(n) && n > 0)) fail("invalid option")

const loadNow = () =>
  Os.loadavg()
    .map((value) => round(value, 2))
    .join(" ")

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

interface CannonResult {
  readonly requests: { readonly average: number; readonly total: number }
  readonly non2xx: number
  readonly errors: number
  readonly timeouts: number
}

const cannon = (url: string, headers: Record<string, string>, durationS: number) =>
  new Promise<CannonResult>((resolve, reject) => {
    ;(autocannon as unknown as (o: object, done: (e: Error | null, r: CannonResult) => void) => unknown)(
      { url, connections: 50, duration: durationS, headers },
      (error, result) => (error ? reject(error) : resolve(result))
    )
  })

const hello = `export default { fetch() { return new Response("hello v0") } }`

/** The shipped router's request work (the invoke header read and stripped, the URL taken from it), then a binding. */
const staticRouter = `export default {
  async fetch(request, env) {
    const header = request.headers.get("x-hostplane-invoke")
    if (header === null) return new Response("not an invocation", { status: 400 })
    const meta = JSON.parse(header)
    const headers = new Headers(request.headers)
    headers.delete("x-hostplane-invoke")
    headers.delete("x-hostplane-check")
    headers.delete("x-hostplane-user")
    const hasBody = request.method !== "GET" && request.method !== "HEAD"
    return env.HELLO.fetch(new Request(meta.url, { method: request.method, headers, body: hasBody ? request.body : null, redirect: "manual" }))
  }
}
`

/** A tail worker as the shipped router's Tail: queue each invocation's events, one call to the node per 25 ms. */
const tailWorker = `let unsent = []
let sending = false
export default {
  async tail(events, env) {
    unsent.push(JSON.stringify({ projectId: "bench", deploymentId: "bench", events }))
    if (sending) return
    sending = true
    try {
      await scheduler.wait(25)
      while (unsent.length > 0) {
        const batch = unsent.splice(0, unsent.length)
        await env.NODE.fetch("http://node/tails", { method: "POST", headers: { "content-type": "application/json" }, body: "[" + batch.join(",") + "]" })
      }
    } finally {
      sending = false
    }
  }
}
`

const invokeHeader = JSON.stringify({ key: "bench:0000000000000000:v1", url: "http://hello.example/", id: "bench.1" })

await runBench(async () => {
  const dir = await makeTempDir("hostplane-bench-worker-ceiling-")
  const file = (name: string, content: string) => Fs.writeFileSync(Path.join(dir, name), content)
  const sock = (name: string) => Path.join(dir, `${name}.sock`)
  const ports = {
    bare: await freePort(),
    router: await freePort(),
    shard: await freePort(),
    proxyBare: await freePort(),
    proxyTail: await freePort(),
    spliceBare: await freePort(),
    hot: await freePort(),
    spliceHot: await freePort(),
    proxyShard: await freePort(),
    shardAb: await freePort(),
    proxyShardAb: await freePort(),
    hotAb: await freePort()
  }
  const capnp = (text: string) => JSON.stringify(text)
  file("hello.js", hello)
  file("static-router.js", staticRouter)
  file("tail.js", tailWorker)
  const workerSource = (name: string) => Path.join(repoRoot, "packages/node/worker", name)
  Fs.copyFileSync(workerSource("router.js"), Path.join(dir, "shard-router.js"))
  // The same bare config as bench/worker.ts, plus a unix socket for the proxy.
  file(
    "bare.capnp",
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "hello", worker = (modules = [ (name = "hello.js", esModule = embed "hello.js") ], compatibilityDate = "2026-11-01")) ],
  sockets = [
    (name = "http", address = "127.0.0.1:${ports.bare}", http = (), service = "hello"),
    (name = "unix", address = ${capnp(`unix:${sock("bare")}`)}, http = (), service = "hello"),
  ],
);
`
  )
  // B and the tailed worker: one workerd with static services only.
  file(
    "static.capnp",
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "hello", worker = (modules = [ (name = "hello.js", esModule = embed "hello.js") ], compatibilityDate = "2026-11-01")),
    (name = "router", worker = (modules = [ (name = "static-router.js", esModule = embed "static-router.js") ], compatibilityDate = "2026-11-01",
      bindings = [ (name = "HELLO", service = "hello") ])),
    (name = "tailed", worker = (modules = [ (name = "hello.js", esModule = embed "hello.js") ], compatibilityDate = "2026-11-01", tails = ["tail"])),
    (name = "tail", worker = (modules = [ (name = "tail.js", esModule = embed "tail.js") ], compatibilityDate = "2026-11-01",
      bindings = [ (name = "NODE", service = "node") ])),
    (name = "node", external = (address = ${capnp(`unix:${sock("node-static")}`)}, http = ())),
  ],
  sockets = [
    (name = "router", address = "127.0.0.1:${ports.router}", http = (), service = "router"),
    (name = "tailed", address = ${capnp(`unix:${sock("tailed")}`)}, http = (), service = "tailed"),
  ],
);
`
  )
  // C: the shard's config as WorkerRuntime writes it, on a TCP socket for the load and a unix one for the proxy.
  const shardConfig = (name: string, tcp: number) =>
    file(
      `${name}.capnp`,
      `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "router", worker = .router),
    (name = "node", external = (address = ${capnp(`unix:${sock(`node-${name}`)}`)}, http = ())),
    (name = "internet", network = (allow = ["public"], deny = ["local", "private", "unix", "unix-abstract"])),
  ],
  sockets = [
    (name = "http", address = "127.0.0.1:${tcp}", http = (), service = "router"),
    (name = "unix", address = ${capnp(`unix:${sock(name)}`)}, http = (), service = "router"),
  ],
);
const router :Workerd.Worker = (
  modules = [ (name = "router.js", esModule = embed "${name}-router.js") ],
  compatibilityDate = "2026-11-01",
  compatibilityFlags = ["experimental"],
  bindings = [
    (name = "LOADER", workerLoader = ()),
    (name = "NODE", service = "node"),
    (name = "INTERNET", service = "internet"),
  ],
  globalOutbound = "internet",
);
`
    )
  shardConfig("shard", ports.shard)
  // The hot shard as HotShard.ts writes it for one project, plus a TCP socket for the direct load.
  const hotShardConfig = (name: string, entry: string, port: number) => {
    const made = hotConfig({
      workers: [
        {
          projectId: "bench",
          key: "bench:0000000000000000:v1",
          deploymentId: "bench",
          digest: "sha256:0000",
          compatibilityDate: "2026-11-01",
          compatibilityFlags: [],
          modules: [
            ["__hostplane_entry.js", { js: entry.replace("__TENANT_ENTRY__", "./index.js") }],
            ["index.js", { js: hello }],
            ["__hostplane_bindings.js", { js: "export default {}" }]
          ],
          secrets: {},
          bindings: {}
        }
      ],
      sockets: [sock(name)],
      nodeSocket: sock("node-hot"),
      routerSource: Fs.readFileSync(workerSource("router.js"), "utf8"),
      outbound: "public"
    })
    file(
      `${name}.capnp`,
      made.config.replace(
        /sockets = \[\n/,
        `sockets = [\n    (name = "tcp", address = "127.0.0.1:${port}", http = (forwardedProtoHeader = "x-forwarded-proto", cfBlobHeader = "x-hostplane-invoke"), service = "w0"),\n`
      )
    )
    return made
  }
  const hot = hotShardConfig("hot", Fs.readFileSync(workerSource("entry.js"), "utf8"), ports.hot)
  const ab = parsed.ab
  if (ab !== undefined) {
    const atRef = (name: string) =>
      execFileSync("git", ["show", `${ab}:packages/node/worker/${name}`], { cwd: repoRoot, encoding: "utf8" })
    file("shard-ab-router.js", atRef("router.js"))
    file("entry-ab.js", atRef("entry.js"))
    shardConfig("shard-ab", ports.shardAb)
  }
  const hotAb =
    ab === undefined
      ? undefined
      : hotShardConfig("hot-ab", Fs.readFileSync(Path.join(dir, "entry-ab.js"), "utf8"), ports.hotAb)
  const peer = Path.join(benchDir, "support/worker-peer.ts")
  const logOf = (name: string) => Path.join(dir, `${name}.log`)
  const nodeArgs = ["--conditions=@hostplane/source", peer]
  const nodeStatic = startChild(
    "stand-in node (static)",
    [...nodeArgs, "node", sock("node-static"), workerSource("entry.js")],
    process.env,
    logOf("node-static")
  )
  const nodeShard = startChild(
    "stand-in node (shard)",
    [...nodeArgs, "node", sock("node-shard"), workerSource("entry.js")],
    process.env,
    logOf("node-shard")
  )
  const nodeHot = startChild(
    "stand-in node (hot)",
    [...nodeArgs, "node", sock("node-hot"), workerSource("entry.js")],
    process.env,
    logOf("node-hot")
  )
  await sleep(500)
  const workerd = (name: string, args: Array<string>, env: Record<string, string> = {}) =>
    startProcess(
      name,
      workerdBinary(),
      ["serve", ...args, Path.join(dir, `${name}.capnp`)],
      { ...process.env, ...env },
      logOf(name)
    )
  const bare = workerd("bare", [])
  const hotShard = workerd("hot", ["--experimental"], hot.env)
  const statics = workerd("static", [])
  const shard = workerd("shard", ["--experimental"])
  const nodeAb =
    ab === undefined
      ? undefined
      : startChild(
          "stand-in node (shard@ref)",
          [...nodeArgs, "node", sock("node-shard-ab"), Path.join(dir, "entry-ab.js")],
          process.env,
          logOf("node-shard-ab")
        )
  if (nodeAb !== undefined) await sleep(500)
  const shardAb = ab === undefined ? undefined : workerd("shard-ab", ["--experimental"])
  const hotShardAb = hotAb === undefined ? undefined : workerd("hot-ab", ["--experimental"], hotAb.env)
  await sleep(500)
  const proxyBare = startChild(
    "proxy (bare)",
    [...nodeArgs, "proxy", sock("bare"), String(ports.proxyBare)],
    process.env,
    logOf("proxy-bare")
  )
  const spliceBare = startChild(
    "splice (bare)",
    [...nodeArgs, "splice", sock("bare"), String(ports.spliceBare)],
    process.env,
    logOf("splice-bare")
  )
  const spliceHot = startChild(
    "splice (hot)",
    [...nodeArgs, "splice", sock("hot"), String(ports.spliceHot)],
    process.env,
    logOf("splice-hot")
  )
  const proxyTail = startChild(
    "proxy (tailed)",
    [...nodeArgs, "proxy", sock("tailed"), String(ports.proxyTail)],
    process.env,
    logOf("proxy-tail")
  )
  const proxyShard = startChild(
    "proxy (shard)",
    [...nodeArgs, "proxy", sock("shard"), String(ports.proxyShard)],
    process.env,
    logOf("proxy-shard")
  )

  const direct = { host: "hello.example" }
  const invoked = { ...direct, "x-hostplane-invoke": invokeHeader }
  // What the edge sends a hot socket: the invocation's id (one for every request here, which the entry module does
  // not mind: its invocation record is per request).
  const hotInvoked = { ...direct, "x-hostplane-invoke": JSON.stringify({ id: "bench.1" }) }
  const peers = {
    bare: { port: ports.bare, headers: direct, pids: { workerd: bare.pid } },
    "proxy+bare": { port: ports.proxyBare, headers: direct, pids: { proxy: proxyBare.pid, workerd: bare.pid } },
    "splice+bare": { port: ports.spliceBare, headers: direct, pids: { splice: spliceBare.pid, workerd: bare.pid } },
    "proxy+tail": {
      port: ports.proxyTail,
      headers: direct,
      pids: { proxy: proxyTail.pid, workerd: statics.pid, node: nodeStatic.pid }
    },
    hot: { port: ports.hot, headers: hotInvoked, pids: { workerd: hotShard.pid } },
    "splice+hot": {
      port: ports.spliceHot,
      headers: hotInvoked,
      pids: { splice: spliceHot.pid, workerd: hotShard.pid }
    },
    router: { port: ports.router, headers: invoked, pids: { workerd: statics.pid } },
    shard: { port: ports.shard, headers: invoked, pids: { workerd: shard.pid, node: nodeShard.pid } },
    "proxy+shard": {
      port: ports.proxyShard,
      headers: direct,
      pids: { proxy: proxyShard.pid, workerd: shard.pid, node: nodeShard.pid }
    }
  } as Record<string, { port: number; headers: Record<string, string>; pids: Record<string, number> }>
  if (ab !== undefined && shardAb !== undefined && nodeAb !== undefined) {
    await sleep(500)
    const proxyShardAb = startChild(
      "proxy (shard@ref)",
      [...nodeArgs, "proxy", sock("shard-ab"), String(ports.proxyShardAb)],
      process.env,
      logOf("proxy-shard-ab")
    )
    if (hotShardAb !== undefined)
      peers[`hot@${ab}`] = { port: ports.hotAb, headers: hotInvoked, pids: { workerd: hotShardAb.pid } }
    peers[`shard@${ab}`] = { port: ports.shardAb, headers: invoked, pids: { workerd: shardAb.pid, node: nodeAb.pid } }
    peers[`proxy+shard@${ab}`] = {
      port: ports.proxyShardAb,
      headers: direct,
      pids: { proxy: proxyShardAb.pid, workerd: shardAb.pid, node: nodeAb.pid }
    }
  }
  type Name = string
  const only = parsed.only?.split(",")
  const names = Object.keys(peers).filter((name) => name === "bare" || only === undefined || only.includes(name))

  // Every peer answers the hello worker before any load.
  for (const name of names) {
    const url = `http://127.0.0.1:${peers[name]!.port}/`
    let body = ""
    for (let i = 0; i < 150 && body !== "hello v0"; i++) {
      body = await request("GET", url, peers[name]!.headers).then(
        (reply) =>
          reply.status === 200
            ? reply.body.toString("utf8")
            : `status ${reply.status}: ${reply.body.toString("utf8").slice(0, 300)}`,
        (error: unknown) => String(error)
      )
      if (body !== "hello v0") await sleep(100)
    }
    if (body !== "hello v0") throw new Error(`${name} does not answer the hello worker: ${body}`)
  }

  const measure = async (name: Name, durationS: number) => {
    const peer = peers[name]!
    const pids = Object.entries(peer.pids)
    const before = pids.map(([, pid]) => cpuSeconds(pid) ?? 0)
    const result = await cannon(`http://127.0.0.1:${peer.port}/`, peer.headers, durationS)
    const perRequest = (cpu: number) => (result.requests.total === 0 ? NaN : (cpu * 1e6) / result.requests.total)
    const parts = Object.fromEntries(
      pids.map(([part, pid], i) => [part, perRequest((cpuSeconds(pid) ?? 0) - before[i]!)])
    )
    return {
      perSecond: result.requests.average,
      cpuUs: Object.values(parts).reduce((sum, us) => sum + us, 0),
      parts,
      failed: result.non2xx + result.errors + result.timeouts
    }
  }
  for (const name of names) await measure(name, warmup)
  log(`${runs} rounds of ${seconds} s at 50 connections over ${names.length} peers (load ${loadNow()})`)
  type Figures = Awaited<ReturnType<typeof measure>>
  const results = Object.fromEntries(names.map((name) => [name, [] as Array<Figures>])) as Record<Name, Array<Figures>>
  const ratios = Object.fromEntries(names.map((name) => [name, [] as Array<number>])) as Record<Name, Array<number>>
  for (let run = 0; run < runs; run++) {
    // Rotated each round, so no peer always runs right after the same other one.
    const order = names.map((_, i) => names[(i + run) % names.length]!)
    for (const name of order) {
      const figures = await measure(name, seconds)
      results[name]!.push(figures)
      const parts = Object.entries(figures.parts)
        .map(([part, us]) => `${part} ${round(us, 0)}`)
        .join(", ")
      log(
        `round ${run + 1} ${name}: ${round(figures.perSecond, 0)} req/s, ${round(figures.cpuUs, 0)} µs CPU per request (${parts}), failed ${figures.failed} (load ${loadNow()})`
      )
    }
    for (const name of names) ratios[name]!.push(results[name]![run]!.perSecond / results.bare![run]!.perSecond)
  }
  const bareCpu = median(results.bare!.map((one) => one.cpuUs))
  console.log(`\npeer                    req/s   ratio (min-max)     CPU/request  CPU ratio  parts (µs)`)
  for (const name of names) {
    const cpu = median(results[name].map((one) => one.cpuUs))
    const partNames = Object.keys(results[name][0]!.parts)
    const parts = partNames.map((part) => `${part} ${round(median(results[name].map((one) => one.parts[part]!)), 0)}`)
    const failed = results[name].reduce((sum, one) => sum + one.failed, 0)
    console.log(
      `${name.padEnd(22)} ${String(round(median(results[name].map((one) => one.perSecond)), 0)).padStart(6)}   ` +
        `${round(median(ratios[name]), 2)}x (${round(Math.min(...ratios[name]), 2)}-${round(Math.max(...ratios[name]), 2)})`.padEnd(
          20
        ) +
        `${String(round(cpu, 0)).padStart(6)} µs    ${round(bareCpu / cpu, 2)}x      ${parts.join(", ")}` +
        (failed > 0 ? `, failed ${failed}` : "")
    )
  }
  console.log(
    `load average ${loadNow()} on ${Os.cpus().length} CPUs; goal of bench:worker: the edge at >= 0.6x of bare`
  )
  // The tails reached the node (a tail worker that fails does so silently, and would make its peer look cheap).
  const nodes = nodeAb === undefined ? [nodeStatic, nodeShard, nodeHot] : [nodeStatic, nodeShard, nodeHot, nodeAb]
  for (const child of nodes) child.process.kill("SIGUSR2")
  await sleep(300)
  for (const child of nodes) log(`${child.name}: ${Fs.readFileSync(child.logFile, "utf8").trim()}`)
}, timeoutS)
