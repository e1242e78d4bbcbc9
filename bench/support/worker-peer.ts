// The peers of `bench/worker-ceiling.ts`, each its own process so that its CPU is counted apart from the load
// generator's:
//   proxy <upstream unix socket> <port>     the edge's hop to a shard and nothing else: node's HTTP server in front,
//                                           undici's `dispatch` to the socket, the edge's header rules and invoke header
//   splice <upstream unix socket> <port>    a connection-level edge: reads a connection's first request head (where a
//                                           real one would pick the project by its Host), then only copies bytes both
//                                           ways; every later request on the connection costs the hop no parsing
//   node <unix socket> <entry.js>           a stand-in for the node's side of a shard: `/code` answers a hello-world
//                                           worker behind the shipped entry module, `/tails` takes the batches
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Net from "node:net"
import { Pool } from "undici"

const [mode, socket, arg] = process.argv.slice(2)
if (socket === undefined || arg === undefined) throw new Error("usage: worker-peer.ts proxy|node <socket> <arg>")

/** The same sets as the edge's hop (`WorkerInvokerLive.ts`). */
const dropped = new Set([
  "service-access-bypass",
  "x-forwarded-for",
  "x-forwarded-proto",
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer"
])
const connectionHeaders = new Set(["connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"])

const helloModule = `export default { fetch() { return new Response("hello v0") } }`

if (mode === "proxy") {
  let invocations = 0
  const pool = new Pool("http://shard", { socketPath: socket, headersTimeout: 0, bodyTimeout: 0 })
  Http.createServer((incoming, response) => {
    const headers: Record<string, string | Array<string>> = {}
    for (const [name, value] of Object.entries(incoming.headers)) {
      if (value === undefined || dropped.has(name) || name.startsWith("x-hostplane-")) continue
      headers[name] = value
    }
    headers["x-forwarded-for"] = incoming.socket.remoteAddress ?? ""
    headers["x-forwarded-proto"] = "http"
    headers["x-hostplane-invoke"] = JSON.stringify({
      key: "bench:0000000000000000:v1",
      url: `http://${incoming.headers.host ?? "localhost"}${incoming.url ?? "/"}`,
      id: `bench.${(++invocations).toString(36)}`
    })
    pool.dispatch(
      { method: incoming.method ?? "GET", path: incoming.url ?? "/", headers },
      {
        onRequestStart: () => {},
        onResponseStart: (controller, status, upstream) => {
          const written: Record<string, string | Array<string>> = {}
          for (const name in upstream) {
            const value = upstream[name]
            if (value === undefined || connectionHeaders.has(name)) continue
            written[name] = value
          }
          response.writeHead(status, written)
          response.on("drain", () => controller.resume())
        },
        onResponseData: (controller, chunk) => {
          if (!response.write(chunk)) controller.pause()
        },
        onResponseEnd: () => response.end(),
        onResponseError: () => response.destroy()
      }
    )
  }).listen(Number(arg), "127.0.0.1")
} else if (mode === "splice") {
  const headEnd = Buffer.from("\r\n\r\n")
  Net.createServer((client) => {
    let head = Buffer.alloc(0)
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk])
      if (head.indexOf(headEnd) === -1) return
      client.off("data", onData)
      client.pause()
      const upstream = Net.connect(socket, () => {
        upstream.write(head)
        client.pipe(upstream)
        upstream.pipe(client)
        client.resume()
      })
      upstream.on("error", () => client.destroy())
      client.on("error", () => upstream.destroy())
      client.on("close", () => upstream.destroy())
    }
    client.on("data", onData)
  }).listen(Number(arg), "127.0.0.1")
} else if (mode === "node") {
  const entry = Fs.readFileSync(arg, "utf8")
  Fs.rmSync(socket, { force: true })
  let events = 0
  Http.createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://node")
    if (url.pathname === "/code") {
      response.writeHead(200, { "content-type": "application/json" })
      response.end(
        JSON.stringify({
          projectId: "bench",
          deploymentId: "bench",
          digest: "sha256:0000",
          compatibilityDate: "2026-11-01",
          compatibilityFlags: [],
          mainModule: "__hostplane_entry.js",
          modules: {
            "index.js": { js: helloModule },
            "__hostplane_entry.js": { js: entry.replace("__TENANT_ENTRY__", "./index.js") },
            // The index of the bindings' modules the entry module imports: none granted here.
            "__hostplane_bindings.js": { js: "export default {}" }
          },
          secrets: {},
          bindings: {},
          outbound: "public"
        })
      )
      return
    }
    // The tails: parsed as the node parses them, so the stand-in pays the node's share of a batch.
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      if (url.pathname === "/tails") {
        const batch = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Array<{ events: Array<unknown> }>
        for (const one of batch) events += one.events.length
      }
      response.writeHead(204)
      response.end()
    })
  }).listen(socket)
  process.on("SIGUSR2", () => console.log(`tail events received: ${events}`))
} else {
  throw new Error(`unknown mode ${mode}`)
}
