// The baseline for bench/me.ts: a bare node:http server answering every request with the same bytes
// (BENCH_BODY_FILE) as `application/json`, on BENCH_LISTEN (host:port). No routing, no auth, no database, no logging.
import { readFileSync } from "node:fs"
import { createServer } from "node:http"

const body = readFileSync(process.env.BENCH_BODY_FILE ?? "")
const listen = process.env.BENCH_LISTEN ?? ""
const colon = listen.lastIndexOf(":")
const host = listen.slice(0, colon)
const port = Number(listen.slice(colon + 1))
if (body.length === 0 || host === "" || !Number.isInteger(port)) {
  console.error("bare-server: BENCH_BODY_FILE (non-empty file) and BENCH_LISTEN=host:port are required")
  process.exit(2)
}

const server = createServer((_request, response) => {
  response.writeHead(200, { "content-type": "application/json", "content-length": body.length })
  response.end(body)
})
server.listen(port, host, () => console.log(`bare-server listening on http://${host}:${port} (${body.length} bytes)`))

const stop = () => {
  server.close(() => process.exit(0))
  server.closeAllConnections()
}
process.once("SIGTERM", stop)
process.once("SIGINT", stop)
