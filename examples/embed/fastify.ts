// The same host on Fastify, hostplane mounted under /platform.
// Run: DATABASE_URL=postgres://... PORT=3000 npx node --conditions=@hostplane/source examples/embed/fastify.ts
import { makeHostplane } from "@hostplane/server"
import Fastify from "fastify"
import { homePage, hostSettings, hostUsers, stopOnSignal } from "./hostUsers.ts"

const { databaseUrl, port } = hostSettings()

const users = await hostUsers(databaseUrl)
const hostplane = await makeHostplane({
  database: { url: databaseUrl },
  prefix: "/platform",
  settings: { settings: { publicUrl: `http://127.0.0.1:${port}/platform` } },
  authenticate: users.authenticate
})

const app = Fastify()
// Before Fastify parses a body: hostplane reads its requests' bodies itself, so it takes them at `onRequest` and
// Fastify leaves the reply to it (`hijack`). Everything else continues through Fastify's routes.
app.addHook("onRequest", (request, reply, done) => {
  const path = request.url.split("?")[0]!
  if (path !== hostplane.prefix && !path.startsWith(`${hostplane.prefix}/`)) return done()
  reply.hijack()
  hostplane.listener(request.raw, reply.raw)
})
app.get("/", (_, reply) => reply.type("text/html; charset=utf-8").send(homePage("/platform")))
app.post("/login", async (request, reply) => {
  const session = await users.login((request.body as { email?: unknown } | undefined)?.email)
  if (session === undefined) return reply.code(400).send({ error: "email required" })
  return reply.header("set-cookie", session.cookie).send(session.user)
})

await app.listen({ port, host: "127.0.0.1" })
console.log(`host listening on http://127.0.0.1:${port} (hostplane under /platform/v1)`)

stopOnSignal(() => app.close(), hostplane, users)
