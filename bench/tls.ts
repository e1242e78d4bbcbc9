// `npm run bench:tls -- [--seconds <s>] [--connections <n>] [--runs <n>] [--timeout <s>]`
//
// HTTPS at the edge, in one run: requests/s for a static asset through the real server's TLS listener (npm start's
// binary, static certificate), with keep-alive connections and with a new connection per request, beside a bare
// `node:https` server in its own process answering the same bytes with the same certificate, measured one after the
// other by the same client, `runs` times in alternating order; the medians and their ratios are printed (goal:
// keep-alive at least 0.7x the bare server), with each server process's CPU per request, which a busy machine
// changes less than the rates. The same two servers are also loaded over plain HTTP (the edge's plain listener, a bare
// `node:http`), so TLS's own cost per request shows as the difference. The new-connection figures are TLS handshakes
// per second. Runs directly on Node type stripping: erasable TypeScript syntax only.
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Https from "node:https"
import * as Os from "node:os"
import * as Path from "node:path"
import { bundleOf, manifestEntry, testAuthority } from "@hostplane/testkit"
import {
  benchDir,
  cpuSeconds,
  freePort,
  log,
  makeTempDir,
  parseOptions,
  request,
  round,
  runBench,
  startChild,
  startHostplane,
  waitFor
} from "./support/harness.ts"

const usage = `usage: npm run bench:tls -- [options]
  --seconds <s>       seconds of load per target and mode (default 10)
  --connections <n>   concurrent clients (default 20)
  --runs <n>          paired runs, edge and bare one after the other, order alternating (default 3)
  --timeout <s>       abort everything after this many seconds (default 600)`

const { values: parsed, fail } = parseOptions(usage, {
  seconds: { type: "string" },
  connections: { type: "string" },
  runs: { type: "string" },
  timeout: { type: "string" }
})
const seconds = Number(parsed.seconds ?? "10")
const connections = Number(parsed.connections ?? "20")
const runs = Number(parsed.runs ?? "3")
const timeoutS = Number(parsed.timeout ?? "600")
if (![seconds, connections, runs, timeoutS].every((n) => Number.isFinite(n) && n > 0)) fail("invalid option")

const staticName = "static.bench.localhost"
const page = `<!doctype html><title>bench</title><p>${"static asset ".repeat(60)}</p>\n`

/** How a load reaches its server: HTTPS with keep-alive, plain HTTP with keep-alive, HTTPS with a new connection each. */
type Mode = "tls" | "plain" | "handshake"

/**
 * `connections` clients each sending GETs back to back for `seconds`: completed 200s per second, and the CPU the
 * server process `pid` spent per completed request (µs).
 */
const load = async (target: { tls: number; plain: number; pid: number }, host: string, ca: string, mode: Mode) => {
  const cpuBefore = cpuSeconds(target.pid)
  const deadline = Date.now() + seconds * 1000
  let ok = 0
  let failed = 0
  const client = async () => {
    const agent =
      mode === "tls"
        ? new Https.Agent({ keepAlive: true, maxSockets: 1 })
        : mode === "plain"
          ? new Http.Agent({ keepAlive: true, maxSockets: 1 })
          : undefined
    while (Date.now() < deadline) {
      const status = await new Promise<number>((resolve) => {
        const options = {
          host: "127.0.0.1",
          path: "/index.html",
          headers: { host },
          ...(agent === undefined ? { agent: false as const } : { agent })
        }
        const onResponse = (response: Http.IncomingMessage) => {
          response.resume()
          response.on("end", () => resolve(response.statusCode ?? 0))
        }
        const req =
          mode === "plain"
            ? Http.request({ ...options, port: target.plain }, onResponse)
            : Https.request(
                // The static certificate names another host (see below), which the handshake asks for by SNI; the
                // request names the site by Host, which is what the edge routes by.
                { ...options, port: target.tls, servername: staticName, ca },
                onResponse
              )
        req.on("error", () => resolve(0))
        req.end()
      })
      if (status === 200) ok++
      else failed++
    }
    agent?.destroy()
  }
  await Promise.all(Array.from({ length: connections }, client))
  const cpuAfter = cpuSeconds(target.pid)
  const cpuUs =
    cpuBefore === undefined || cpuAfter === undefined || ok === 0 ? NaN : ((cpuAfter - cpuBefore) * 1e6) / ok
  return { perSecond: ok / seconds, failed, cpuUs }
}

type Figures = Awaited<ReturnType<typeof load>>

/** The machine's 1-minute load average now: a figure taken at a load of 10 on 2 cores is not one taken at 1. */
const loadNow = () => round(Os.loadavg()[0]!, 2)

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

await runBench(async () => {
  const dir = await makeTempDir("hostplane-bench-tls-")
  const ca = testAuthority()
  // A certificate for another name, served to the site's SNI as the static one: the TLS work is that of any
  // certificate, and the edge's plain listener serves the site instead of redirecting it to https (a name the
  // certificate covers is redirected), so the same server is measured over both.
  const leaf = ca.issue([staticName])
  Fs.writeFileSync(Path.join(dir, "edge.pem"), leaf.chain)
  Fs.writeFileSync(Path.join(dir, "edge.key"), leaf.key, { mode: 0o600 })
  const tlsPort = await freePort()
  const plainPort = await freePort()
  const server = await startHostplane(dir, {
    SERVICE_EDGE_LISTEN: `127.0.0.1:${plainPort}`,
    SERVICE_EDGE_TLS_LISTEN: `127.0.0.1:${tlsPort}`,
    SERVICE_TLS_CERT_FILE: Path.join(dir, "edge.pem"),
    SERVICE_TLS_KEY_FILE: Path.join(dir, "edge.key"),
    SERVICE_WORKERS: "off"
  })
  const json = { authorization: `Bearer ${server.token}`, "content-type": "application/json" }
  const slug = `bench-${Date.now().toString(36)}`
  if ((await request("POST", `${server.base}/v1/orgs`, json, JSON.stringify({ name: slug, slug }))).status !== 201)
    throw new Error("org create failed")
  const project = await request(
    "POST",
    `${server.base}/v1/orgs/${slug}/projects`,
    json,
    JSON.stringify({ name: "site" })
  )
  const host = (JSON.parse(project.body.toString("utf8")) as { hostname: string }).hostname
  const body = await Effect.runPromise(
    bundleOf([manifestEntry({ name: "site" }), { name: "assets/index.html", content: page }])
  )
  const deployed = await fetch(`${server.base}/v1/orgs/${slug}/projects/site/deployments`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.token}`, "content-type": "application/gzip" },
    body
  })
  if (deployed.status !== 201) throw new Error(`deploy answered ${deployed.status}: ${await deployed.text()}`)

  const bodyFile = Path.join(dir, "page.html")
  Fs.writeFileSync(bodyFile, page)
  const barePort = await freePort()
  const barePlainPort = await freePort()
  const bare = startChild(
    "bare",
    [Path.join(benchDir, "https-bare-server.ts")],
    {
      ...process.env,
      BENCH_LISTEN: `127.0.0.1:${barePort}`,
      BENCH_PLAIN_LISTEN: `127.0.0.1:${barePlainPort}`,
      BENCH_BODY_FILE: bodyFile,
      BENCH_CERT_FILE: Path.join(dir, "edge.pem"),
      BENCH_KEY_FILE: Path.join(dir, "edge.key")
    },
    Path.join(dir, "bare.log")
  )
  await waitFor(bare, 15_000, async () => {
    const probe = await new Promise<number>((resolve, reject) =>
      Https.get(
        {
          host: "127.0.0.1",
          port: barePort,
          path: "/",
          servername: host,
          ca: ca.root,
          checkServerIdentity: () => undefined
        },
        (response) => {
          response.resume()
          resolve(response.statusCode ?? 0)
        }
      ).on("error", reject)
    )
    return probe === 200 ? true : undefined
  })

  const targets = {
    edge: { tls: tlsPort, plain: plainPort, pid: server.child.pid },
    bare: { tls: barePort, plain: barePlainPort, pid: bare.pid }
  }
  const modes: ReadonlyArray<Mode> = ["tls", "plain", "handshake"]
  // Warm-up: the edge's caches and the JIT, unmeasured.
  for (const target of Object.values(targets)) for (const mode of modes) await load(target, host, ca.root, mode)
  log(`load: ${connections} clients, ${seconds} s per target and mode, ${runs} runs, HTTP/1.1, TLS 1.3 (ECDSA P-256)`)
  const results = new Map<string, Array<Figures>>()
  for (let run = 0; run < runs; run++) {
    const order = run % 2 === 0 ? (["edge", "bare"] as const) : (["bare", "edge"] as const)
    for (const mode of modes) {
      for (const name of order) {
        const figures = await load(targets[name], host, ca.root, mode)
        results.set(`${name} ${mode}`, [...(results.get(`${name} ${mode}`) ?? []), figures])
        log(
          `run ${run + 1} ${name} ${mode}: ${round(figures.perSecond, 0)}/s, ${round(figures.cpuUs, 0)} µs CPU per request (load ${loadNow()})`
        )
      }
    }
  }
  const rate = (key: string) => median((results.get(key) ?? []).map((one) => one.perSecond))
  const cpu = (key: string) => median((results.get(key) ?? []).map((one) => one.cpuUs))
  const failed = (key: string) => (results.get(key) ?? []).reduce((sum, one) => sum + one.failed, 0)
  const line = (name: string, mode: Mode) =>
    `${name}: edge ${round(rate(`edge ${mode}`), 0)}/s, bare ${round(rate(`bare ${mode}`), 0)}/s, ratio ${round(rate(`edge ${mode}`) / rate(`bare ${mode}`), 2)}x; ` +
    `server CPU per request edge ${round(cpu(`edge ${mode}`), 0)} µs, bare ${round(cpu(`bare ${mode}`), 0)} µs, ratio ${round(cpu(`bare ${mode}`) / cpu(`edge ${mode}`), 2)}x ` +
    `(medians of ${runs}; failed: edge ${failed(`edge ${mode}`)}, bare ${failed(`bare ${mode}`)})`
  console.log(line("keep-alive HTTPS requests (bare: node:https)", "tls") + " (goal >= 0.7x)")
  console.log(line("keep-alive plain HTTP requests, same servers (bare: node:http)", "plain"))
  console.log(line("new TLS connection per request (handshakes)", "handshake"))
  const tlsCost = (name: string) => round(cpu(`${name} tls`) - cpu(`${name} plain`), 0)
  console.log(
    `TLS's own CPU per keep-alive request (HTTPS minus plain HTTP, same server): edge ${tlsCost("edge")} µs, bare ${tlsCost("bare")} µs`
  )
  console.log(
    `load average ${Os.loadavg()
      .map((value) => round(value, 2))
      .join(" ")} on ${Os.cpus().length} CPUs`
  )
}, timeoutS)
