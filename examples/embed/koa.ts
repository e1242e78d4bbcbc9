// The same host on Koa, hostplane mounted under /platform.
// Run: DATABASE_URL=postgres://... PORT=3000 npx node --conditions=@hostplane/source examples/embed/koa.ts
import { makeHostplane } from "@hostplane/server"
import Koa from "koa"
import { closeNodeServer, homePage, hostSettings, hostUsers, stopOnSignal } from "./hostUsers.ts"

const { databaseUrl, port } = hostSettings()

const users = await hostUsers(databaseUrl)
const hostplane = await makeHostplane({
  database: { url: databaseUrl },
  prefix: "/platform",
  settings: { settings: { publicUrl: `http://127.0.0.1:${port}/platform` } },
  authenticate: users.authenticate
})

/** The request body as JSON (the host's own routes; Koa has no parser built in), at most 16 KiB. */
const readJson = async (request: AsyncIterable<Buffer>): Promise<unknown> => {
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of request) {
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

const app = new Koa()
// First: a request under /platform is hostplane's, which answers it on the raw response (`respond = false` tells Koa
// to leave it alone); the middleware settles when the answer is sent, so the host's own logging still times it.
app.use(async (ctx, next) => {
  if (ctx.path !== hostplane.prefix && !ctx.path.startsWith(`${hostplane.prefix}/`)) return next()
  ctx.respond = false
  await new Promise<void>((resolve) => {
    ctx.res.once("close", resolve)
    hostplane.listener(ctx.req, ctx.res)
  })
})
app.use(async (ctx) => {
  if (ctx.method === "GET" && ctx.path === "/") {
    ctx.type = "html"
    ctx.body = homePage("/platform")
    return
  }
  if (ctx.method === "POST" && ctx.path === "/login") {
    const body = await readJson(ctx.req)
    const session = await users.login((body as { email?: unknown } | undefined)?.email)
    if (session === undefined) {
      ctx.status = 400
      ctx.body = { error: "email required" }
      return
    }
    ctx.set("set-cookie", session.cookie)
    ctx.body = session.user
  }
})

const server = app.listen(port, "127.0.0.1", () =>
  console.log(`host listening on http://127.0.0.1:${port} (hostplane under /platform/v1)`)
)

stopOnSignal(closeNodeServer(server), hostplane, users)
