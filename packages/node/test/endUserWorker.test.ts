import * as Pg from "@hostplane/adapters-pg"
import { BackupStoreDisk, SocialOAuthHttp } from "@hostplane/adapters-providers"
import { EndUser, Jobs } from "@hostplane/core"
import { bundleOf, FakeIdentityProvider } from "@hostplane/testkit"
import { Effect, Exit, Layer, Scope } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { backends } from "../../http/test/support/backends.ts"
import { execSmall } from "../../http/test/support/SmallSpawner.ts"
import { useSuite } from "../../http/test/support/TestServer.ts"

const folder = mkdtempSync(Path.join(Os.tmpdir(), "hostplane-http-enduser-"))
const idpScope = Effect.runSync(Scope.make())
const idp = await Effect.runPromise(
  Scope.provide(
    FakeIdentityProvider.make({
      userinfoStyle: "github",
      user: { subject: "4242", login: "octo", email: "octo@example.test", name: "Octo Cat" }
    }),
    idpScope
  )
)
afterAll(async () => {
  await Effect.runPromise(Scope.close(idpScope, Exit.void))
  rmSync(folder, { recursive: true, force: true })
})

interface Connect {
  readonly host: string
  readonly port: number
  readonly user: string
  readonly password: string
}

/** The real psql, as the project's owner runs it. */
const psql = async (at: Connect, command: string) => {
  const { code, stdout, stderr } = await execSmall(
    "psql",
    ["-h", at.host, "-p", String(at.port), "-U", at.user, "-d", "app", "-XAtqc", command],
    { env: { ...process.env, PGPASSWORD: at.password, PGCONNECT_TIMEOUT: "10" } }
  )
  if (code !== 0) throw new Error(stderr)
  return stdout.trim()
}

interface EdgeReply {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly text: string
  readonly json: () => any
}

/** A browser's cookies for one host: what `Set-Cookie` sets, `Max-Age=0` removes. */
const jar = () => {
  const cookies = new Map<string, string>()
  return {
    cookies,
    header: () => [...cookies].map(([name, value]) => `${name}=${value}`).join("; "),
    take: (setCookie: ReadonlyArray<string> | undefined) => {
      for (const line of setCookie ?? []) {
        const [pair = ""] = line.split(";")
        const at = pair.indexOf("=")
        const name = pair.slice(0, at).trim()
        if (/max-age=0\b/i.test(line)) cookies.delete(name)
        else cookies.set(name, pair.slice(at + 1))
      }
    }
  }
}

const slow = 240_000

describe("spec 4.9 the edge's auth worker, end to end over HTTP with cookies against the fake provider", () => {
  const node = Pg.DatabaseNodeEmbedded.layer({ directory: Path.join(folder, "node"), durable: false })
  const suite = useSuite(backends[0]![1], {}, undefined, undefined, {
    providers: [
      Layer.mergeAll(node, BackupStoreDisk.layer(Path.join(folder, "backups"))),
      Layer.merge(
        SocialOAuthHttp.layer({
          endpoints: {
            github: { authorizeUrl: idp.authorizeUrl, tokenUrl: idp.tokenUrl, userinfoUrl: idp.userinfoUrl }
          }
        }),
        // The worker verifies the clusters' certificates with the node's authority (one build: the same node).
        Pg.EndUserDirectoryPg.layer.pipe(Layer.provide(node))
      )
    ]
  })
  const { api, newOrg, newProject } = suite
  const admin = () => ({ token: suite.admin.token })

  const edge = (host: string, path: string, browser?: ReturnType<typeof jar>, method = "GET") =>
    new Promise<EdgeReply>((resolve, reject) => {
      const url = new URL(suite.server.edgeUrl)
      const cookie = browser?.header()
      const request = Http.request(
        {
          host: url.hostname,
          port: url.port,
          path,
          method,
          headers: { host, ...(cookie === undefined || cookie === "" ? {} : { cookie }) }
        },
        (response) => {
          const chunks: Array<Buffer> = []
          response.on("data", (chunk: Buffer) => chunks.push(chunk))
          response.on("end", () => {
            browser?.take(response.headers["set-cookie"])
            const text = Buffer.concat(chunks).toString()
            resolve({ status: response.statusCode!, headers: response.headers, text, json: () => JSON.parse(text) })
          })
        }
      )
      request.on("error", reject)
      request.end()
    })

  /** The provider's authorize page: it signs the user in and sends the browser back to the callback URL. */
  const authorize = async (location: string) => {
    const reply = await fetch(location, { redirect: "manual" })
    expect(reply.status).toBe(302)
    return new URL(reply.headers.get("location")!)
  }

  /** Login, the provider, the callback: answers the callback's reply. */
  const signIn = async (host: string, browser: ReturnType<typeof jar>, next = "/app") => {
    const start = await edge(host, `/__service/auth/login/github?next=${encodeURIComponent(next)}`, browser)
    expect(start.status).toBe(303)
    const back = await authorize(start.headers.location!)
    expect(`${back.protocol}//${back.host}${back.pathname}`).toBe(`https://${host}/__service/auth/callback/github`)
    return edge(host, `${back.pathname}${back.search}`, browser)
  }

  /** A deployed project with its database, auth granted and GitHub registered with the fake's client. */
  const ready = async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const base = `/v1/orgs/${slug}/projects/${project.name}`
    const bytes = await Effect.runPromise(
      bundleOf([
        { name: "service.json", content: JSON.stringify({ name: "site", auth: true }) },
        { name: "assets/index.html", content: "<h1>home</h1>" },
        { name: "assets/404.html", content: "<h1>the deployment's own 404</h1>" }
      ])
    )
    const upload = await fetch(`${suite.server.url}${base}/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${suite.admin.token}`, "content-type": "application/gzip" },
      body: bytes
    })
    expect(upload.status).toBe(201)
    const db = (await api.post(`${base}/database`, undefined, admin())).body as Connect
    expect((await api.post(`${base}/auth`, undefined, admin())).status).toBe(200)
    const put = await api.put(
      `${base}/auth/providers/github`,
      { clientId: idp.clientId, clientSecret: idp.clientSecret },
      admin()
    )
    expect(put.status).toBe(200)
    return { slug, base, host: project.hostname, db }
  }

  it(
    "login (PKCE, state cookie), callback, me, logout: the session cookie is HttpOnly and only its hash is stored",
    async () => {
      const { host, db } = await ready()
      const browser = jar()
      const start = await edge(host, "/__service/auth/login/github?next=/app", browser)
      expect(start.status).toBe(303)
      const authorizeUrl = new URL(start.headers.location!)
      expect(`${authorizeUrl.origin}${authorizeUrl.pathname}`).toBe(idp.authorizeUrl)
      expect(authorizeUrl.searchParams.get("client_id")).toBe(idp.clientId)
      expect(authorizeUrl.searchParams.get("code_challenge_method")).toBe("S256")
      expect(authorizeUrl.searchParams.get("redirect_uri")).toBe(`https://${host}/__service/auth/callback/github`)
      const flowCookie = (start.headers["set-cookie"] ?? []).find((c) => c.startsWith("__Host-service_auth_flow="))
      expect(flowCookie).toMatch(/HttpOnly/i)
      expect(flowCookie).toMatch(/Secure/i)

      const back = await authorize(start.headers.location!)
      const done = await edge(host, `${back.pathname}${back.search}`, browser)
      expect(done.status).toBe(303)
      expect(done.headers.location).toBe("/app")
      const session = (done.headers["set-cookie"] ?? []).find((c) => c.startsWith("__Host-service_auth="))
      expect(session).toMatch(/HttpOnly/i)
      expect(session).toMatch(/SameSite=Lax/i)
      expect(session).toMatch(/Max-Age=2592000/)
      expect(browser.cookies.has("__Host-service_auth_flow")).toBe(false)
      const token = browser.cookies.get("__Host-service_auth")!
      expect(token.length).toBeGreaterThan(40)

      const me = await edge(host, "/__service/auth/me", browser)
      expect(me.status).toBe(200)
      expect(me.headers["cache-control"]).toBe("no-store")
      expect(me.json()).toMatchObject({
        provider: "github",
        subject: "4242",
        email: "octo@example.test",
        name: "Octo Cat"
      })
      expect((await edge(host, "/__service/auth/me")).status).toBe(401)

      // In the project's own database: one user, one identity, one session stored by its hash only.
      expect(await psql(db, "select count(*) from service_auth.users")).toBe("1")
      expect(await psql(db, "select provider || ':' || subject from service_auth.identities")).toBe("github:4242")
      expect(await psql(db, "select count(*) from service_auth.sessions")).toBe("1")
      expect(await psql(db, `select count(*) from service_auth.sessions where token_hash = '${token}'`)).toBe("0")

      const out = await edge(host, "/__service/auth/logout", browser, "POST")
      expect(out.status).toBe(303)
      expect(browser.cookies.has("__Host-service_auth")).toBe(false)
      expect(await psql(db, "select count(*) from service_auth.sessions")).toBe("0")
      // The old token no longer opens a session even if a browser kept it.
      const kept = jar()
      kept.cookies.set("__Host-service_auth", token)
      expect((await edge(host, "/__service/auth/me", kept)).status).toBe(401)
    },
    slow
  )

  it(
    "a callback without the browser's state cookie, or with another state, is 400 state_mismatch and opens nothing",
    async () => {
      const { host, db } = await ready()
      const victim = jar()
      const start = await edge(host, "/__service/auth/login/github", victim)
      const back = await authorize(start.headers.location!)
      const attacker = jar()
      const planted = await edge(host, `${back.pathname}${back.search}`, attacker)
      expect(planted.status).toBe(400)
      expect(planted.json().code).toBe("state_mismatch")
      const other = new URLSearchParams(back.search)
      other.set("state", "not-the-state")
      const forged = await edge(host, `${back.pathname}?${other}`, victim)
      expect(forged.json().code).toBe("state_mismatch")
      // Nothing reached the project's database: not even the schema was made.
      expect(await psql(db, "select to_regclass('service_auth.sessions') is null")).toBe("t")
      expect((await edge(host, "/__service/auth/login/google")).status).toBe(404)
      // No provider named: the answer says what the path needs, not an empty name.
      const unnamed = await edge(host, "/__service/auth/login")
      expect([unnamed.status, unnamed.json().code]).toEqual([404, "not_found"])
      expect(unnamed.json().message).toBe("name a provider: /__service/auth/login/<provider>")
    },
    slow
  )

  it(
    "allowSignups false refuses an unknown user (403 signups_closed) but signs a known one in; expired sessions are removed",
    async () => {
      const { host, base, db } = await ready()
      expect((await signIn(host, jar())).status).toBe(303)
      expect((await api.patch(`${base}/auth`, { allowSignups: false }, admin())).status).toBe(200)
      await Effect.runPromise(idp.signIn({ subject: "777", login: "newcomer", email: "new@example.test" }))
      const refused = await signIn(host, jar())
      expect(refused.status).toBe(403)
      expect(refused.json().code).toBe("signups_closed")
      expect(await psql(db, "select count(*) from service_auth.users")).toBe("1")
      await psql(
        db,
        "insert into service_auth.sessions select 'stale', id, 'github', '4242', now() - interval '40 days', now() - interval '10 days' from service_auth.users"
      )
      await Effect.runPromise(
        idp.signIn({ subject: "4242", login: "octo", email: "octo@example.test", name: "Octo Cat" })
      )
      const known = jar()
      expect((await signIn(host, known)).status).toBe(303)
      expect((await edge(host, "/__service/auth/me", known)).json().subject).toBe("4242")
      expect(await psql(db, "select count(*) from service_auth.sessions where token_hash = 'stale'")).toBe("0")
    },
    slow
  )

  it(
    "a provider delete removes that provider's identities in the project's database (made before it); users and open sessions stay",
    async () => {
      const { host, base, db } = await ready()
      const purge = () => suite.server.run(Jobs.JobRunner.runOnce([EndUser.identitiesDeleteHandler]))
      const putGithub = async () => {
        const put = await api.put(
          `${base}/auth/providers/github`,
          { clientId: idp.clientId, clientSecret: idp.clientSecret },
          admin()
        )
        expect(put.status).toBe(200)
      }
      const identities = () =>
        psql(
          db,
          "select coalesce(string_agg(provider || ':' || subject, ',' order by subject), '') from service_auth.identities"
        )
      await Effect.runPromise(
        idp.signIn({ subject: "4242", login: "octo", email: "octo@example.test", name: "Octo Cat" })
      )
      const browser = jar()
      expect((await signIn(host, browser)).status).toBe(303)
      expect(await identities()).toBe("github:4242")

      expect((await api.delete(`${base}/auth/providers/github`, undefined, admin())).status).toBe(204)
      // An unknown name and a provider never registered are 204 too, and leave nothing to do.
      expect((await api.delete(`${base}/auth/providers/google`, undefined, admin())).status).toBe(204)
      expect((await api.delete(`${base}/auth/providers/gitlab`, undefined, admin())).status).toBe(204)
      expect(await purge()).toBeGreaterThanOrEqual(1)
      expect(await identities()).toBe("")
      expect(await psql(db, "select count(*) from service_auth.users")).toBe("1")
      expect((await edge(host, "/__service/auth/login/github")).status).toBe(404)
      // Neither spec 4.9 nor decisions.md ends open sessions with the provider: a session runs to its end (README).
      expect((await edge(host, "/__service/auth/me", browser)).json()).toMatchObject({
        provider: "github",
        subject: "4242"
      })

      // Registered again: the same person signs in as a new user (the old record stays, without its identity).
      await putGithub()
      expect((await signIn(host, jar())).status).toBe(303)
      expect(await psql(db, "select count(*) from service_auth.users")).toBe("2")
      // Deleted, registered again and used before the job runs: only the identities made before the delete go.
      expect((await api.delete(`${base}/auth/providers/github`, undefined, admin())).status).toBe(204)
      await putGithub()
      await Effect.runPromise(idp.signIn({ subject: "5151", login: "late", email: "late@example.test" }))
      expect((await signIn(host, jar())).status).toBe(303)
      expect(await identities()).toBe("github:4242,github:5151")
      await purge()
      expect(await identities()).toBe("github:5151")
      expect(await psql(db, "select count(*) from service_auth.users")).toBe("3")
    },
    slow
  )

  it(
    "a provider delete on a database where no one signed in makes no schema there",
    async () => {
      const { base, db } = await ready()
      expect((await api.delete(`${base}/auth/providers/github`, undefined, admin())).status).toBe(204)
      expect(await suite.server.run(Jobs.JobRunner.runOnce([EndUser.identitiesDeleteHandler]))).toBeGreaterThanOrEqual(
        1
      )
      expect(await psql(db, "select to_regclass('service_auth.identities') is null")).toBe("t")
    },
    slow
  )

  it(
    "after a revoke /__service/auth/* passes through to the deployment; the subscriber data stays",
    async () => {
      const { host, base, db } = await ready()
      const browser = jar()
      expect((await signIn(host, browser)).status).toBe(303)
      expect((await api.delete(`${base}/auth`, undefined, admin())).status).toBe(204)
      for (const path of ["/__service/auth/me", "/__service/auth/login/github"]) {
        const reply = await edge(host, path, browser)
        expect({ path, status: reply.status, text: reply.text }).toEqual({
          path,
          status: 404,
          text: "<h1>the deployment's own 404</h1>"
        })
      }
      expect(await psql(db, "select count(*) from service_auth.users")).toBe("1")
    },
    slow
  )
})
