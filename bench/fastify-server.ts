// The peer for bench/me.ts and bench/write.ts: what a user would write by hand with Fastify and node-postgres, as
// prepared statements on a pool, against hostplane's own database (BENCH_DATABASE_URL), on BENCH_LISTEN.
// - `GET /v1/me` hashes the bearer token and makes the same two reads as hostplane (the session with its user, then
//   the memberships with their orgs).
// - `PUT .../secrets/{name}` does what hostplane's secret put does, in one transaction: the session, the org row
//   locked with the membership and the project read under it (404, 403, 409 `op_in_flight`), the value sealed with
//   hostplane's own key (BENCH_SEAL_KEY_FILE: AES-256-GCM, `<projectId>/<name>` as AAD), the version upsert, the
//   `secret.set` audit row and the project's node revision raised last.
import { createCipheriv, createHash, createSecretKey, randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
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

// hostplane's tables live in its own schema (SERVICE_PG_SCHEMA, default hostplane): every connection looks there.
const pool = new pg.Pool({
  connectionString: url,
  max: 10,
  options: `-c search_path=${process.env.SERVICE_PG_SCHEMA || "hostplane"}`
})

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

/** The session's user, or undefined: one prepared read, as hostplane makes when nothing is cached. */
const authenticate = async (authorization: string | undefined) => {
  const header = authorization ?? ""
  if (!header.startsWith("Bearer ")) return undefined
  const tokenHash = createHash("sha256").update(header.slice(7)).digest("hex")
  const found = await pool.query({ ...session, values: [tokenHash, new Date().toISOString()] })
  return found.rows[0] as { id: string; provider: string; subject: string; email: string; name: string } | undefined
}

const app = Fastify({ logger: false })
app.get("/v1/me", async (request, reply) => {
  const user = await authenticate(request.headers.authorization)
  if (user === undefined) return reply.code(401).send(unauthorized)
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

// Secrets: hostplane's key file (`k1`, 32 bytes of base64), its name rules, its statements.
const sealKeyFile = process.env.BENCH_SEAL_KEY_FILE ?? ""
const sealKey =
  sealKeyFile === "" ? undefined : createSecretKey(Buffer.from(readFileSync(sealKeyFile, "utf8").trim(), "base64"))
const seal = (plaintext: string, context: string) => {
  if (sealKey === undefined) throw new Error("BENCH_SEAL_KEY_FILE is not set")
  const nonce = randomBytes(12)
  const cipher = createCipheriv("aes-256-gcm", sealKey, nonce, { authTagLength: 16 })
  cipher.setAAD(Buffer.from(context, "utf8"))
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  return Buffer.concat([nonce, body, cipher.getAuthTag()]).toString("base64")
}
const secretName = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/u
const reserved = (name: string) => {
  const upper = name.toUpperCase()
  return upper === "DB" || upper === "ASSETS" || upper.startsWith("SERVICE_")
}
const lockedAccess = {
  name: "put_access",
  text: `SELECT o.id AS org_id, ms.role, p.id AS project_id, p.deleting_since
         FROM orgs o
         JOIN memberships ms ON ms.org_id = o.id AND ms.user_id = $2
         LEFT JOIN projects p ON p.org_id = o.id AND p.name = $3
         WHERE o.slug = $1
         FOR UPDATE OF o`
}
const upsertSecret = {
  name: "put_secret",
  text: `INSERT INTO secrets (project_id, name, version, key_id, ciphertext, updated_at)
         VALUES ($1, $2, 1, 'k1', $3, $4::timestamptz)
         ON CONFLICT (project_id, name) DO UPDATE SET
           version = secrets.version + 1,
           key_id = EXCLUDED.key_id,
           ciphertext = EXCLUDED.ciphertext,
           updated_at = EXCLUDED.updated_at
         RETURNING name, version, updated_at`
}
const auditRow = {
  name: "put_audit",
  text: `INSERT INTO audit_events (action, org_id, actor_id, target, data, at)
         VALUES ('secret.set', $1, $2, $3, $4::jsonb, $5)`
}
const raiseRevision = {
  name: "put_revision",
  text: `WITH next AS (UPDATE node_revision SET value = value + 1 RETURNING value)
         INSERT INTO project_revisions (project_id, revision) SELECT $1, value FROM next
         ON CONFLICT (project_id) DO UPDATE SET revision = excluded.revision`
}
const problem = (status: number, code: string, message: string) => ({ status, body: { error: { code, message } } })

type SecretParams = { orgSlug: string; projectName: string; secretName: string }
app.put<{ Params: SecretParams; Body: { value?: unknown } }>(
  "/v1/orgs/:orgSlug/projects/:projectName/secrets/:secretName",
  async (request, reply) => {
    const user = await authenticate(request.headers.authorization)
    if (user === undefined) return reply.code(401).send(unauthorized)
    const { orgSlug, projectName, secretName: name } = request.params
    const value = request.body?.value
    if (typeof value !== "string" || !value.isWellFormed() || Buffer.byteLength(value) > 64 * 1024)
      return reply.code(400).send(problem(400, "bad_request", "bad value").body)
    if (!secretName.test(name)) return reply.code(400).send(problem(400, "bad_request", "bad name").body)
    if (reserved(name)) return reply.code(400).send(problem(400, "reserved_name", "reserved").body)
    const client = await pool.connect()
    try {
      await client.query("BEGIN")
      const access = (await client.query({ ...lockedAccess, values: [orgSlug, user.id, projectName] })).rows[0]
      const refused =
        access === undefined
          ? problem(404, "not_found", `organization ${orgSlug} not found`)
          : access.role === "viewer"
            ? problem(403, "forbidden", "this needs the member role or higher")
            : access.project_id === null
              ? problem(404, "not_found", `project ${projectName} not found`)
              : access.deleting_since !== null
                ? problem(409, "op_in_flight", `project ${projectName} is being deleted`)
                : undefined
      if (refused !== undefined) {
        await client.query("ROLLBACK")
        return reply.code(refused.status).send(refused.body)
      }
      const at = new Date().toISOString()
      const sealed = seal(value, `${access.project_id}/${name}`)
      const meta = (await client.query({ ...upsertSecret, values: [access.project_id, name, sealed, at] })).rows[0]
      await client.query({
        ...auditRow,
        values: [access.org_id, user.id, access.project_id, JSON.stringify({ name }), at]
      })
      await client.query({ ...raiseRevision, values: [access.project_id] })
      await client.query("COMMIT")
      return {
        name: meta.name,
        version: meta.version,
        updatedAt: meta.updated_at instanceof Date ? meta.updated_at.toISOString() : meta.updated_at
      }
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined)
      throw error
    } finally {
      client.release()
    }
  }
)

await app.listen({ host, port })
console.log(`fastify-server listening on http://${host}:${port}`)

const stop = () => {
  void app.close().then(() => pool.end().then(() => process.exit(0)))
}
process.once("SIGTERM", stop)
process.once("SIGINT", stop)
