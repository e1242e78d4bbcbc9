import type { HostIdentity, HostRequest } from "@hostplane/http"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import pg from "pg"

/**
 * The host application's own users and sign-in, as any backend has them: a `host_users` table in its own database
 * (created if missing), `login(email)` (a user created on first use) and a signed `host_session` cookie. Nothing here
 * knows hostplane except `authenticate`, which tells hostplane who a request's cookie belongs to.
 */
export const hostUsers = async (databaseUrl: string) => {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 })
  await pool.query("CREATE TABLE IF NOT EXISTS host_users (id serial PRIMARY KEY, email text NOT NULL UNIQUE)")
  // A real host keeps this secret in its settings; a fresh one signs everyone out at each start.
  const secret = process.env["HOST_SESSION_SECRET"] ?? randomBytes(32).toString("hex")
  const mac = (id: string) => createHmac("sha256", secret).update(id).digest("base64url")

  /** The session cookie of the user with `email`, created on first use; undefined for something not an address. */
  const login = async (email: unknown) => {
    if (typeof email !== "string" || !/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 254) return undefined
    const { rows } = await pool.query<{ id: number; email: string }>(
      `INSERT INTO host_users (email) VALUES ($1)
       ON CONFLICT (email) DO UPDATE SET email = EXCLUDED.email RETURNING id, email`,
      [email.toLowerCase()]
    )
    const user = rows[0]!
    return {
      user,
      cookie: `host_session=${user.id}.${mac(String(user.id))}; Path=/; HttpOnly; SameSite=Lax`
    }
  }

  /** hostplane's authenticator: the `host_session` cookie's user as `{ provider: "host", subject: <id>, email }`. */
  const authenticate = async (request: HostRequest): Promise<HostIdentity | undefined> => {
    const [id, signature] = (request.cookies["host_session"] ?? "").split(".")
    if (id === undefined || signature === undefined || !/^[0-9]{1,12}$/.test(id)) return undefined
    const expected = Buffer.from(mac(id))
    const given = Buffer.from(signature)
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
    const { rows } = await pool.query<{ id: number; email: string }>("SELECT id, email FROM host_users WHERE id = $1", [
      Number(id)
    ])
    const user = rows[0]
    return user === undefined ? undefined : { provider: "host", subject: String(user.id), email: user.email }
  }

  return { login, authenticate, close: () => pool.end() }
}

/** The host's own page. */
export const homePage = (mountedAt: string) =>
  `<!doctype html><title>The host</title><h1>The host's own page</h1><p>hostplane answers under ${mountedAt}/v1.</p>\n`

/** The host's settings, from the environment as each example's first comment runs it. */
export const hostSettings = () => {
  const databaseUrl = process.env["DATABASE_URL"]
  if (databaseUrl === undefined || databaseUrl === "") throw new Error("set DATABASE_URL to the host's PostgreSQL")
  return { databaseUrl, port: Number(process.env["PORT"] ?? 3000) }
}

/** Closing a Node HTTP server at once: its idle keep-alive connections too, so the process can exit. */
export const closeNodeServer = (server: { closeAllConnections: () => void; close: () => unknown }) => () => {
  server.closeAllConnections()
  server.close()
}

/** On SIGINT or SIGTERM: the host's server stops taking requests, then hostplane and the host's pool close. */
export const stopOnSignal = (
  closeServer: () => unknown,
  hostplane: { readonly dispose: () => Promise<void> },
  users: { readonly close: () => Promise<void> }
) => {
  const stop = () => {
    void Promise.resolve(closeServer())
      .then(() => hostplane.dispose())
      .then(users.close)
      .then(() => process.exit(0))
  }
  process.once("SIGINT", stop)
  process.once("SIGTERM", stop)
}
