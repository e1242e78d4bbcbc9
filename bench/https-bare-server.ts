// The peer of bench/tls.ts: a bare node:https server answering every request with the same bytes (BENCH_BODY_FILE)
// as text/html, with the edge's certificate (BENCH_CERT_FILE, BENCH_KEY_FILE), on BENCH_LISTEN (host:port). Its own
// process, as the edge is: the bench's client never shares its event loop. No routing, no logging. With
// BENCH_PLAIN_LISTEN, the same over plain HTTP too.
import { readFileSync } from "node:fs"
import { createServer as createPlainServer, type IncomingMessage, type ServerResponse } from "node:http"
import { createServer } from "node:https"

const body = readFileSync(process.env.BENCH_BODY_FILE ?? "")
const listen = process.env.BENCH_LISTEN ?? ""
const colon = listen.lastIndexOf(":")
const host = listen.slice(0, colon)
const port = Number(listen.slice(colon + 1))
if (body.length === 0 || host === "" || !Number.isInteger(port)) {
  console.error("https-bare-server: BENCH_BODY_FILE (non-empty file) and BENCH_LISTEN=host:port are required")
  process.exit(2)
}

const answer = (_request: IncomingMessage, response: ServerResponse) => {
  response.writeHead(200, { "content-type": "text/html; charset=utf-8", "content-length": body.length })
  response.end(body)
}
const server = createServer(
  {
    cert: readFileSync(process.env.BENCH_CERT_FILE ?? ""),
    key: readFileSync(process.env.BENCH_KEY_FILE ?? ""),
    keepAliveTimeout: 65_000
  },
  answer
)
server.listen(port, host, () => console.log(`https-bare-server listening on ${host}:${port} (${body.length} bytes)`))
// BENCH_PLAIN_LISTEN: the same answer over plain HTTP (node:http), so TLS's own cost is the difference.
const plainListen = process.env.BENCH_PLAIN_LISTEN ?? ""
const plain = createPlainServer({ keepAliveTimeout: 65_000 }, answer)
if (plainListen !== "") {
  const at = plainListen.lastIndexOf(":")
  plain.listen(Number(plainListen.slice(at + 1)), plainListen.slice(0, at))
}

const stop = () => {
  plain.close()
  plain.closeAllConnections()
  server.close(() => process.exit(0))
  server.closeAllConnections()
}
process.once("SIGTERM", stop)
process.once("SIGINT", stop)
