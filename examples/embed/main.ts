// A backend that already runs, with its own users and sign-in, and hostplane inside it on the same database.
// Run: DATABASE_URL=postgres://... PORT=3000 npx node --conditions=@hostplane/source examples/embed/main.ts
import { makeHostplane } from "@hostplane/server"
import { createServer, type IncomingMessage } from "node:http"
import { closeNodeServer, homePage, hostSettings, hostUsers, stopOnSignal } from "./hostUsers.ts"

const { databaseUrl, port } = hostSettings()

const users = await hostUsers(databaseUrl)
// hostplane's tables go in the schema `hostplane` of the same database; the host's own tables are never touched.
// A request without hostplane's bearer token is the user of its `host_session` cookie (created on first sight).
const hostplane = await makeHostplane({
  database: { url: databaseUrl },
  settings: { settings: { publicUrl: `http://127.0.0.1:${port}` } },
  authenticate: users.authenticate
})

const readJson = async (request: IncomingMessage): Promise<unknown> => {
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > 16_384) return undefined
    chunks.push(chunk)
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"))
  } catch {
    return undefined
  }
}

const server = createServer((request, response) => {
  if (request.method === "GET" && request.url === "/") {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(homePage(""))
    return
  }
  if (request.method === "POST" && request.url === "/login") {
    void readJson(request)
      .then((body) => users.login((body as { email?: unknown } | undefined)?.email))
      .then(
        (session) =>
          session === undefined
            ? response.writeHead(400, { "content-type": "application/json" }).end('{"error":"email required"}')
            : response
                .writeHead(200, { "content-type": "application/json", "set-cookie": session.cookie })
                .end(JSON.stringify(session.user)),
        () => response.writeHead(500).end()
      )
    return
  }
  // Everything else is hostplane's: /v1/... (unknown paths answer its 404 envelope).
  hostplane.listener(request, response)
})
server.listen(port, "127.0.0.1", () => console.log(`host listening on http://127.0.0.1:${port} (hostplane under /v1)`))

stopOnSignal(closeNodeServer(server), hostplane, users)
