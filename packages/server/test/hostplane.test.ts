import { PgClient } from "@effect/sql-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { ArtifactStoreDisk, BundleReader, SealerAesGcm } from "@hostplane/adapters-providers"
import type { Mounted } from "@hostplane/http"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeHostplane } from "../src/Hostplane.ts"

/** A backend's own tables, with rows, in its database's `public` schema. */
const backendTables = [
  "CREATE TABLE users (id serial PRIMARY KEY, email text NOT NULL UNIQUE)",
  "CREATE TABLE sessions (token text PRIMARY KEY, user_id int NOT NULL REFERENCES users (id))",
  "CREATE TABLE orgs (id serial PRIMARY KEY, label text NOT NULL)",
  "INSERT INTO users (email) VALUES ('ada@example.com'), ('bob@example.com')",
  "INSERT INTO sessions VALUES ('host-session-1', 1), ('host-session-2', 2)",
  "INSERT INTO orgs (label) VALUES ('acme')"
]

const adapters = {
  sealer: SealerAesGcm.layerEphemeral,
  bundles: BundleReader.layer().pipe(Layer.provideMerge(ArtifactStoreDisk.layerTemp))
}

describe("makeHostplane on a backend's database", () => {
  const database = ManagedRuntime.make(TestDatabase.layerBare)
  const query = <A extends object>(text: string, ...values: Array<unknown>) =>
    database.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(text, values)))
  const snapshot = async () => ({
    rows: await Promise.all(["users", "sessions", "orgs"].map((table) => query(`TABLE public.${table} ORDER BY 1`))),
    objects: await query(`SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' ORDER BY 1`)
  })
  // The host's authenticator reads its own sessions table through its own pool.
  const authenticate = async (request: { readonly cookies: Readonly<Record<string, string>> }) => {
    const token = request.cookies["sid"]
    if (token === undefined) return undefined
    const [row] = await query<{ id: number; email: string }>(
      "SELECT u.id, u.email FROM public.sessions s JOIN public.users u ON u.id = s.user_id WHERE s.token = $1",
      token
    )
    return row === undefined ? undefined : { provider: "host", subject: String(row.id), email: row.email }
  }
  let before: Awaited<ReturnType<typeof snapshot>>
  let url: Redacted.Redacted<string>
  const opened: Array<{ hostplane: Mounted<unknown>; server: Http.Server }> = []

  const start = async (options: Omit<Parameters<typeof makeHostplane>[0], "adapters" | "authenticate">) => {
    const hostplane = (await makeHostplane({ ...options, authenticate, adapters, jobs: false })) as Mounted<unknown>
    const server = Http.createServer((request, response) =>
      hostplane.listener(request, response, () => response.end("the host's own page"))
    )
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    opened.push({ hostplane, server })
    return { hostplane, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
  }

  beforeAll(async () => {
    for (const statement of backendTables) await query(statement)
    before = await snapshot()
    url = (await database.runPromise(Effect.service(TestDatabase))).url
  })

  afterAll(async () => {
    for (const { hostplane, server } of opened) {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      await hostplane.dispose()
    }
    await database.dispose()
  })

  it("one call from a URL: mounted under the prefix, the host's sessions are its users, its tables untouched", async () => {
    const { hostplane, base } = await start({
      database: { url: Redacted.value(url) },
      prefix: "/platform",
      settings: { settings: { publicUrl: "http://127.0.0.1/platform" } }
    })
    expect(await (await fetch(`${base}/`)).text()).toBe("the host's own page")
    expect((await fetch(`${base}/platform/v1/me`)).status).toBe(401)
    const me = await fetch(`${base}/platform/v1/me`, { headers: { cookie: "sid=host-session-1" } })
    expect(me.status).toBe(200)
    const body = (await me.json()) as { user: { id: string; subject: string; email: string }; orgs: Array<unknown> }
    expect(body.user).toMatchObject({ subject: "1", email: "ada@example.com" })
    expect(body.orgs).toHaveLength(1)
    expect((await fetch(`${base}/platform/v1/me`, { headers: { cookie: "sid=forged" } })).status).toBe(401)
    // Its rows are in its own schema; the backend's tables and rows are as they were.
    const [row] = await query<{ id: string }>(
      "SELECT id FROM hostplane.users WHERE provider = 'host' AND subject = '1'"
    )
    expect(row?.id).toBe(body.user.id)
    expect(await snapshot()).toEqual(before)
    // The host's own code, in process, as the same user.
    const ada = hostplane.asUser({ provider: "host", subject: "1" })
    expect((await ada.identity.me()).user.id).toBe(body.user.id)
    const org = await ada.orgs.create({ payload: { name: "Ada's team" } })
    const members = await ada.members.list({ params: { orgSlug: org.slug } })
    expect(members.items.map((member) => member.userId)).toEqual([body.user.id])
  })

  it("one call from the host's own PgClient layer, in another schema: a second installation", async () => {
    const { base } = await start({
      database: { client: PgClient.layer({ url, maxConnections: 2 }) },
      schema: "platform_two"
    })
    const me = await fetch(`${base}/v1/me`, { headers: { cookie: "sid=host-session-2" } })
    expect(me.status).toBe(200)
    const body = (await me.json()) as { user: { id: string; subject: string } }
    expect(body.user.subject).toBe("2")
    const [two] = await query<{ count: string }>("SELECT count(*)::text AS count FROM platform_two.users")
    expect(two?.count).toBe("1")
    expect(await snapshot()).toEqual(before)
  })

  it("a schema name that is not an identifier fails the call, naming it", async () => {
    await expect(
      makeHostplane({ database: { url: Redacted.value(url) }, schema: "Not-A-Name", adapters, jobs: false })
    ).rejects.toThrow(/Not-A-Name/)
  })
})
