import { PgClient } from "@effect/sql-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { ArtifactStoreDisk, BundleReader, SealerAesGcm } from "@hostplane/adapters-providers"
import { Secrets } from "@hostplane/core"
import type { Mounted } from "@hostplane/http"
import { bundleOf, manifestEntry, PaymentGatewayMemory } from "@hostplane/testkit"
import { Context, Effect, Layer, ManagedRuntime, Redacted, Result } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type HostplaneAdapters, makeHostplane } from "../src/Hostplane.ts"

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

  const start = async (
    options: Omit<Parameters<typeof makeHostplane>[0], "adapters" | "authenticate">,
    more: HostplaneAdapters = {}
  ) => {
    const hostplane = (await makeHostplane({
      ...options,
      authenticate,
      adapters: { ...adapters, ...more },
      jobs: false
    })) as Mounted<unknown>
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

  it("every provider is off unless given: a payment gateway in `providers` replaces billing's off form", async () => {
    const billingOf = async (schema: string, more: HostplaneAdapters) => {
      const { hostplane, base } = await start({ database: { url: Redacted.value(url) }, schema }, more)
      const org = await hostplane.asUser({ provider: "host", subject: "1" }).orgs.create({ payload: { name: "Paid" } })
      const reply = await fetch(`${base}/v1/orgs/${org.slug}/billing`, { headers: { cookie: "sid=host-session-1" } })
      expect(reply.status).toBe(200)
      return (await reply.json()) as { enabled: boolean }
    }
    expect((await billingOf("platform_off", {})).enabled).toBe(false)
    expect((await billingOf("platform_paid", { providers: PaymentGatewayMemory.layer() })).enabled).toBe(true)
  })

  /** Seals through the built hostplane, then opens the value with a sealer on `keyRing` alone. */
  const sealedUnder = async (hostplane: Mounted<unknown>, keyRing: string) => {
    const sealer = Context.get(hostplane.context as Context.Context<Secrets.Sealer>, Secrets.Sealer)
    const sealed = await Effect.runPromise(sealer.seal("the secret", "p/NAME"))
    const options = SealerAesGcm.parseKeyRing(keyRing)
    if (Result.isFailure(options)) throw new Error(options.failure)
    return Effect.runPromise(
      Effect.flatMap(Effect.service(Secrets.Sealer), (other) => other.open(sealed, "p/NAME")).pipe(
        Effect.provide(SealerAesGcm.layer(options.success))
      )
    )
  }

  it("dataDir and sealKey are options: no SERVICE_DATA_DIR or SERVICE_SEAL_KEY in the environment", async () => {
    expect(process.env["SERVICE_DATA_DIR"] ?? "").toBe("")
    expect(process.env["SERVICE_SEAL_KEY"] ?? "").toBe("")
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-embed-data-"))
    const second = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-embed-data-"))
    try {
      // The default sealer's key file and the uploaded bundles go to the folder given.
      const hostplane = (await makeHostplane({
        database: { url: Redacted.value(url) },
        schema: "files_one",
        dataDir,
        settings: { identity: { devAuth: true } },
        jobs: false
      })) as Mounted<unknown>
      opened.push({ hostplane, server: Http.createServer() })
      const keyFile = Path.join(dataDir, "seal.key")
      expect(Fs.statSync(keyFile).mode & 0o777).toBe(0o600)
      expect(await sealedUnder(hostplane, Fs.readFileSync(keyFile, "utf8"))).toBe("the secret")
      const login = await hostplane.handler(
        new Request("http://host.test/v1/auth/dev/login", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ subject: "files" })
        })
      )
      const { token } = (await login.json()) as { token: string }
      const org = await hostplane
        .asUser({ provider: "dev", subject: "files" })
        .orgs.create({ payload: { name: "Files" } })
      const call = (path: string, init: RequestInit) =>
        hostplane.handler(
          new Request(`http://host.test/v1/orgs/${org.slug}${path}`, {
            ...init,
            headers: { authorization: `Bearer ${token}`, ...init.headers }
          })
        )
      expect(
        (
          await call("/projects", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ name: "site" })
          })
        ).status
      ).toBe(201)
      const body = await Effect.runPromise(
        bundleOf([
          manifestEntry({ name: "site" }),
          { name: "assets/", type: "directory" },
          { name: "assets/index.html", content: "<h1>kept in the data folder</h1>" }
        ])
      )
      const deployed = await call("/projects/site/deployments", {
        method: "POST",
        headers: { "content-type": "application/gzip" },
        body
      })
      expect(deployed.status, await deployed.clone().text()).toBe(201)
      expect(Fs.readdirSync(Path.join(dataDir, "artifacts")).length).toBeGreaterThan(0)

      // A key ring given is the one secrets are sealed with, and no key file is written.
      const keyRing = `k7:${randomBytes(32).toString("base64")}`
      const keyed = (await makeHostplane({
        database: { url: Redacted.value(url) },
        schema: "files_one",
        dataDir: second,
        sealKey: Redacted.make(keyRing),
        jobs: false
      })) as Mounted<unknown>
      opened.push({ hostplane: keyed, server: Http.createServer() })
      expect(await sealedUnder(keyed, keyRing)).toBe("the secret")
      expect(Fs.existsSync(Path.join(second, "seal.key"))).toBe(false)
      // A malformed one fails the call, naming the setting and never the key.
      const bad = `k8:${"A".repeat(10)}`
      const failed = makeHostplane({
        database: { url: Redacted.value(url) },
        schema: "files_one",
        sealKey: bad,
        jobs: false
      })
      await expect(failed).rejects.toThrow(/SERVICE_SEAL_KEY/)
      await expect(failed).rejects.not.toThrow(bad)
    } finally {
      Fs.rmSync(dataDir, { recursive: true, force: true })
      Fs.rmSync(second, { recursive: true, force: true })
    }
  })

  it("a schema name that is not an identifier fails the call, naming it", async () => {
    await expect(
      makeHostplane({ database: { url: Redacted.value(url) }, schema: "Not-A-Name", adapters, jobs: false })
    ).rejects.toThrow(/Not-A-Name/)
  })
})
