import * as Pg from "@hostplane/adapters-pg"
import { BackupStoreDisk, SocialOAuthHttp } from "@hostplane/adapters-providers"
import { FakeIdentityProvider, manifestEntry } from "@hostplane/testkit"
import { Effect, Exit, Layer, Scope } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { edgeCall, eventually, useRuntimeSuite } from "./support/RuntimeServer.ts"

const folder = mkdtempSync(Path.join(Os.tmpdir(), "hostplane-node-auth-"))
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

const slow = 240_000

/** Reports the end user of the request it received, of a request it built itself, and what headers it saw. */
const worker = `export default {
  async fetch(request, env) {
    if (env.auth === undefined) return Response.json({ auth: "absent" })
    return Response.json({
      user: await env.auth.user(request),
      built: await env.auth.user(new Request(request.url, { headers: request.headers })),
      handle: request.headers.get("x-hostplane-user"),
      cookie: request.headers.get("cookie")
    })
  }
}`

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

describe("env.auth: the end user of the request, resolved by the edge (real workerd, real sign-in)", () => {
  const node = Pg.DatabaseNodeEmbedded.layer({ directory: Path.join(folder, "node"), durable: false })
  const suite = useRuntimeSuite(
    { timeoutMs: 20_000 },
    {},
    {
      providers: [
        Layer.mergeAll(node, BackupStoreDisk.layer(Path.join(folder, "backups"))),
        Layer.merge(
          SocialOAuthHttp.layer({
            endpoints: {
              github: { authorizeUrl: idp.authorizeUrl, tokenUrl: idp.tokenUrl, userinfoUrl: idp.userinfoUrl }
            }
          }),
          Pg.EndUserDirectoryPg.layer.pipe(Layer.provide(node))
        )
      ]
    }
  )
  const admin = () => ({ token: suite.admin.token })

  const edge = async (host: string, path: string, browser?: ReturnType<typeof jar>, headers = {}) => {
    const cookie = browser?.header()
    const reply = await edgeCall(suite.edgeUrl, host, path, {
      headers: { ...headers, ...(cookie === undefined || cookie === "" ? {} : { cookie }) }
    })
    browser?.take(reply.headers["set-cookie"])
    return reply
  }

  const signIn = async (host: string, browser: ReturnType<typeof jar>) => {
    const start = await edge(host, "/__service/auth/login/github?next=/app", browser)
    expect(start.status).toBe(303)
    const authorized = await fetch(start.headers.location!, { redirect: "manual" })
    expect(authorized.status).toBe(302)
    const back = new URL(authorized.headers.get("location")!)
    const done = await edge(host, `${back.pathname}${back.search}`, browser)
    expect(done.status).toBe(303)
  }

  const ready = async () => {
    const project = await suite.newProject()
    const base = `/v1/orgs/${project.slug}/projects/${project.name}`
    const bundle = [manifestEntry({ name: "app", workerFirst: true }), { name: "worker/index.js", content: worker }]
    expect((await suite.deploy(project.slug, project.name, bundle)).status).toBe(201)
    expect((await edge(project.hostname, "/app")).json()).toEqual({ auth: "absent" })
    expect((await suite.api.post(`${base}/database`, undefined, admin())).status).toBe(200)
    expect((await suite.api.post(`${base}/auth`, undefined, admin())).status).toBe(200)
    const provider = await suite.api.put(
      `${base}/auth/providers/github`,
      { clientId: idp.clientId, clientSecret: idp.clientSecret },
      admin()
    )
    expect(provider.status).toBe(200)
    expect(await eventually(async () => (await edge(project.hostname, "/app")).json().auth !== "absent", 10_000)).toBe(
      true
    )
    return { ...project, base }
  }

  it(
    "user(request) is null before sign-in and the signed-in user after; a request the worker built is null; the cookie and handle stay hidden",
    async () => {
      const { hostname } = await ready()
      const browser = jar()
      expect((await edge(hostname, "/app", browser)).json()).toEqual({
        user: null,
        built: null,
        handle: null,
        cookie: null
      })
      await signIn(hostname, browser)
      expect(browser.cookies.has("__Host-service_auth")).toBe(true)
      browser.cookies.set("theirs", "1")
      const seen = (await edge(hostname, "/app", browser)).json()
      expect(seen.user).toEqual({
        id: expect.stringMatching(/^eu_/),
        email: "octo@example.test",
        name: "Octo Cat",
        provider: "github"
      })
      expect(seen.built).toBeNull()
      expect(seen.handle).toBeNull()
      expect(seen.cookie).toBe("theirs=1")
    },
    slow
  )

  it(
    "a client cannot forge the user: a made-up handle header, invocation header or session cookie resolves null",
    async () => {
      const { hostname } = await ready()
      const browser = jar()
      await signIn(hostname, browser)
      const forged = await edge(hostname, "/app", undefined, {
        "x-hostplane-user": "guess",
        "x-hostplane-invoke": JSON.stringify({ key: "k", url: "http://x/", user: "guess" }),
        cookie: "__Host-service_auth=not-a-session"
      })
      expect(forged.json()).toMatchObject({ user: null, built: null, handle: null, cookie: null })
      // The real session still works beside it.
      expect((await edge(hostname, "/app", browser)).json().user?.email).toBe("octo@example.test")
    },
    slow
  )

  it(
    "a revoke takes env.auth away at the next convergence, without a redeploy",
    async () => {
      const { hostname, base } = await ready()
      expect((await suite.api.delete(`${base}/auth`, undefined, admin())).status).toBe(204)
      expect(await eventually(async () => (await edge(hostname, "/app")).json().auth === "absent", 5_000)).toBe(true)
    },
    slow
  )
})
