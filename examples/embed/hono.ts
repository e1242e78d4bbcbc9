// The same host on Hono: hostplane's web-standard handler under /platform.
// Run: DATABASE_URL=postgres://... PORT=3000 npx node --conditions=@hostplane/source examples/embed/hono.ts
import { serve } from "@hono/node-server"
import { makeHostplane } from "@hostplane/server"
import { Hono } from "hono"
import { homePage, hostSettings, hostUsers, stopOnSignal } from "./hostUsers.ts"

const { databaseUrl, port } = hostSettings()

const users = await hostUsers(databaseUrl)
const hostplane = await makeHostplane({
  database: { url: databaseUrl },
  prefix: "/platform",
  settings: { settings: { publicUrl: `http://127.0.0.1:${port}/platform` } },
  authenticate: users.authenticate
})

const app = new Hono()
app.get("/", (c) => c.html(homePage("/platform")))
app.post("/login", async (c) => {
  const body: unknown = await c.req.json().catch(() => undefined)
  const session = await users.login((body as { email?: unknown } | undefined)?.email)
  if (session === undefined) return c.json({ error: "email required" }, 400)
  c.header("set-cookie", session.cookie)
  return c.json(session.user)
})
// The raw Request goes through untouched (its body unread), the prefix included: the handler cuts it.
app.all("/platform", (c) => hostplane.handler(c.req.raw))
app.all("/platform/*", (c) => hostplane.handler(c.req.raw))

const server = serve({ fetch: app.fetch, port, hostname: "127.0.0.1" }, () =>
  console.log(`host listening on http://127.0.0.1:${port} (hostplane under /platform/v1)`)
)

stopOnSignal(() => server.close(), hostplane, users)
