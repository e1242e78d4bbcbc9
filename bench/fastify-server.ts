// The peer for bench/me.ts: what a user would write by hand with Fastify and node-postgres. `GET /v1/me` hashes the
// bearer token and makes the same two reads as hostplane (the session with its user, then the memberships with their
// orgs) as prepared statements on a pool, against hostplane's own database (BENCH_DATABASE_URL), on BENCH_LISTEN.
import { createHash } from "node:crypto"
import Fastify from "fastify"
import pg from "pg"

const url = process.env.BENCH_DATABASE_URL ?? ""
const listen = process.env.BENCH_LISTEN ?? ""
const colon = listen.lastIndexOf(":")
const host = listen.slice(0, colon)
const port = Number(listen.slice(colon + 1))
if (url === "" || host === "" || !Number.isInteger(port)) {
  console.error("fastify-server: BENCH_DATABASE_URL and BENCH_LISTEN=host:port are required")
  process.exit(2)
}

const pool = new pg.Pool({ connectionString: url, max: 10 })

const session = {
  name: "me_session",
  text: `SELECT u.id, u.provider, u.subject, u.email, u.name
         FROM sessions s JOIN users u ON u.id = s.user_id
         WHERE s.token_hash = $1 AND s.expires_at > $2`
}
const memberships = {
  name: "me_memberships",
  text: `SELECT o.slug, o.name, o.plan, o.personal, o.created_at, ms.role
         FROM memberships ms JOIN orgs o ON o.id = ms.org_id
         WHERE ms.user_id = $1
         ORDER BY ms.joined_at, o.slug COLLATE "C"`
}

const unauthorized = { error: { code: "unauthorized", message: "sign in first" } }

const app = Fastify({ logger: false })
app.get("/v1/me", async (request, reply) => {
  const header = request.headers.authorization ?? ""
  if (!header.startsWith("Bearer ")) return reply.code(401).send(unauthorized)
  const tokenHash = createHash("sha256").update(header.slice(7)).digest("hex")
  const found = await pool.query({ ...session, values: [tokenHash, new Date().toISOString()] })
  if (found.rows.length === 0) return reply.code(401).send(unauthorized)
  const user = found.rows[0]
  const orgs = await pool.query({ ...memberships, values: [user.id] })
  return {
    user: { id: user.id, provider: user.provider, subject: user.subject, email: user.email, name: user.name },
    orgs: orgs.rows.map((org) => ({
      slug: org.slug,
      name: org.name,
      plan: org.plan,
      personal: org.personal,
      createdAt: org.created_at instanceof Date ? org.created_at.toISOString() : org.created_at,
      role: org.role,
      projectLimit: org.plan === "pro" ? 50 : 3
    }))
  }
})

await app.listen({ host, port })
console.log(`fastify-server listening on http://${host}:${port}`)

const stop = () => {
  void app.close().then(() => pool.end().then(() => process.exit(0)))
}
process.once("SIGTERM", stop)
process.once("SIGINT", stop)
