// The same host on Express, hostplane mounted under /platform and given the host's own Effect SQL client.
// Run: DATABASE_URL=postgres://... PORT=3000 npx node --conditions=@hostplane/source examples/embed/express.ts
import { PgClient } from "@effect/sql-pg"
import { makeHostplane } from "@hostplane/server"
import { Redacted } from "effect"
import express from "express"
import { closeNodeServer, homePage, hostSettings, hostUsers, stopOnSignal } from "./hostUsers.ts"

const { databaseUrl, port } = hostSettings()

const users = await hostUsers(databaseUrl)
const hostplane = await makeHostplane({
  // A host on Effect SQL hands its client layer: hostplane connects as it does, with its own pool and schema.
  database: { client: PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 2 }) },
  prefix: "/platform",
  settings: { settings: { publicUrl: `http://127.0.0.1:${port}/platform` } },
  authenticate: users.authenticate
})

const app = express()
// First, at the root and before any body parser: it answers /platform/... and passes everything else on.
app.use(hostplane.listener)
app.get("/", (_, response) => {
  response.type("html").send(homePage("/platform"))
})
app.post("/login", express.json(), async (request, response) => {
  const session = await users.login((request.body as { email?: unknown } | undefined)?.email)
  if (session === undefined) {
    response.status(400).json({ error: "email required" })
    return
  }
  response.setHeader("set-cookie", session.cookie).json(session.user)
})

const server = app.listen(port, "127.0.0.1", () =>
  console.log(`host listening on http://127.0.0.1:${port} (hostplane under /platform/v1)`)
)

stopOnSignal(closeNodeServer(server), hostplane, users)
