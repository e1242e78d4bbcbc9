// `npm run bench:tls -- [--seconds <s>] [--connections <n>] [--timeout <s>]`
//
// HTTPS at the edge, in one run: requests/s for a static asset through the real server's TLS listener (npm start's
// binary, static certificate), with keep-alive connections and with a new connection per request, beside a bare
// `node:https` server answering the same bytes with the same certificate, measured one after the other by the same
// client; the ratios are printed (goal: keep-alive at least 0.7x the bare server). The new-connection figures are
// TLS handshakes per second. Runs directly on Node type stripping: erasable TypeScript syntax only.
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Https from "node:https"
import * as Path from "node:path"
import { bundleOf, manifestEntry, testAuthority } from "@hostplane/testkit"
import {
  freePort,
  log,
  makeTempDir,
  parseOptions,
  request,
  round,
  runBench,
  startHostplane
} from "./support/harness.ts"

const usage = `usage: npm run bench:tls -- [options]
  --seconds <s>       seconds of load per target and mode (default 10)
  --connections <n>   concurrent clients (default 20)
  --timeout <s>       abort everything after this many seconds (default 600)`

const { values: parsed, fail } = parseOptions(usage, {
  seconds: { type: "string" },
  connections: { type: "string" },
  timeout: { type: "string" }
})
const seconds = Number(parsed.seconds ?? "10")
const connections = Number(parsed.connections ?? "20")
const timeoutS = Number(parsed.timeout ?? "600")
if (![seconds, connections, timeoutS].every((n) => Number.isFinite(n) && n > 0)) fail("invalid option")

const page = `<!doctype html><title>bench</title><p>${"static asset ".repeat(60)}</p>\n`

/** `connections` clients each sending GETs back to back for `seconds`: completed 200s per second. */
const load = async (port: number, host: string, ca: string, keepAlive: boolean) => {
  const deadline = Date.now() + seconds * 1000
  let ok = 0
  let failed = 0
  const client = async () => {
    const agent = keepAlive ? new Https.Agent({ keepAlive: true, maxSockets: 1 }) : undefined
    while (Date.now() < deadline) {
      const status = await new Promise<number>((resolve) => {
        const req = Https.request(
          {
            host: "127.0.0.1",
            port,
            path: "/index.html",
            servername: host,
            headers: { host },
            ca,
            ...(agent === undefined ? { agent: false } : { agent })
          },
          (response) => {
            response.resume()
            response.on("end", () => resolve(response.statusCode ?? 0))
          }
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
  return { perSecond: ok / seconds, failed }
}

await runBench(async () => {
  const dir = await makeTempDir("hostplane-bench-tls-")
  const ca = testAuthority()
  const leaf = ca.issue(["*.apps.localhost", "apps.localhost"])
  Fs.writeFileSync(Path.join(dir, "edge.pem"), leaf.chain)
  Fs.writeFileSync(Path.join(dir, "edge.key"), leaf.key, { mode: 0o600 })
  const tlsPort = await freePort()
  const server = await startHostplane(dir, {
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

  const bare = Https.createServer({ cert: leaf.chain, key: leaf.key, keepAliveTimeout: 65_000 }, (_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", "content-length": Buffer.byteLength(page) })
    res.end(page)
  })
  const barePort = await freePort()
  await new Promise<void>((resolve) => bare.listen(barePort, "127.0.0.1", resolve))

  // Warm-up: the edge's caches and the JIT, unmeasured.
  await load(tlsPort, host, ca.root, true)
  log(`load: ${connections} clients, ${seconds} s per target and mode, HTTP/1.1 over TLS 1.3 (ECDSA P-256)`)
  const edgeKeep = await load(tlsPort, host, ca.root, true)
  const bareKeep = await load(barePort, host, ca.root, true)
  const edgeNew = await load(tlsPort, host, ca.root, false)
  const bareNew = await load(barePort, host, ca.root, false)
  bare.close()
  const line = (
    name: string,
    edge: { perSecond: number; failed: number },
    peer: { perSecond: number; failed: number }
  ) =>
    `${name}: edge ${round(edge.perSecond, 0)}/s, bare node:https ${round(peer.perSecond, 0)}/s, ratio ${round(edge.perSecond / peer.perSecond, 2)}x (failed: edge ${edge.failed}, bare ${peer.failed})`
  console.log(line("keep-alive requests", edgeKeep, bareKeep) + " (goal >= 0.7x)")
  console.log(line("new connection per request (handshakes)", edgeNew, bareNew))
}, timeoutS)
