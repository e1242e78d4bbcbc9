import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { FakeIdentityProvider } from "@hostplane/testkit"
import { Effect, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type ServerProcess, startServer, stopServer } from "./support/ServerProcess.ts"

/**
 * Spec 4.1's identity-provider sign-in on the server built exactly as `npm start` builds it: the provider comes from
 * the `SERVICE_IDP_*` settings, the way an operator configures it, and nothing else signs anyone in (dev login off).
 */
describe("sign-in through the identity provider on the server built from settings", () => {
  const appCallback = "http://app.test/signed-in"
  let idp: ManagedRuntime.ManagedRuntime<FakeIdentityProvider, never>
  let fake: FakeIdentityProvider["Service"]
  let server: ServerProcess & { readonly base: string }
  let dataDir: string
  beforeAll(async () => {
    idp = ManagedRuntime.make(FakeIdentityProvider.layer())
    fake = await idp.runPromise(Effect.service(FakeIdentityProvider))
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-signin-"))
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const started = await startServer(base, {
      SERVICE_DATA_DIR: dataDir,
      SERVICE_LISTEN: `127.0.0.1:${port}`,
      SERVICE_EDGE_LISTEN: `127.0.0.1:${await freePort()}`,
      SERVICE_DNS_LISTEN: `127.0.0.1:${await freePort()}`,
      SERVICE_PUBLIC_URL: base,
      DATABASE_URL: "",
      SERVICE_ENABLE_DEV_AUTH: "false",
      SERVICE_OAUTH_REDIRECTS: "http://app.test/",
      SERVICE_IDP_AUTHORIZE_URL: fake.authorizeUrl,
      SERVICE_IDP_TOKEN_URL: fake.tokenUrl,
      SERVICE_IDP_USERINFO_URL: fake.userinfoUrl,
      SERVICE_IDP_CLIENT_ID: fake.clientId,
      SERVICE_IDP_CLIENT_SECRET: fake.clientSecret ?? ""
    })
    server = { ...started, base }
  }, 150_000)
  afterAll(async () => {
    await stopServer(server?.child, "SIGKILL")
    await idp?.dispose()
    rmSync(dataDir, { recursive: true, force: true })
  })

  /** start, the provider's authorize page, and the callback with the state cookie start set: the browser's trip. */
  const signIn = async () => {
    const start = await fetch(`${server.base}/v1/auth/idp/start?redirect=${encodeURIComponent(appCallback)}`, {
      redirect: "manual"
    })
    expect(start.status).toBe(302)
    const setCookie = start.headers.get("set-cookie") ?? ""
    expect(setCookie).toMatch(/^hostplane_oauth=[A-Za-z0-9_-]{43}; /)
    expect(setCookie).toContain("HttpOnly")
    const authorize = new URL(start.headers.get("location")!)
    expect(`${authorize.origin}${authorize.pathname}`).toBe(fake.authorizeUrl)
    expect(authorize.searchParams.get("code_challenge_method")).toBe("S256")
    const page = await fetch(authorize, { redirect: "manual" })
    expect(page.status).toBe(302)
    const back = new URL(page.headers.get("location")!)
    expect(`${back.origin}${back.pathname}`).toBe(`${server.base}/v1/auth/idp/callback`)
    const callback = await fetch(back, { redirect: "manual", headers: { cookie: setCookie.split(";")[0]! } })
    expect(callback.status).toBe(302)
    const location = new URL(callback.headers.get("location")!)
    expect(`${location.origin}${location.pathname}`).toBe(appCallback)
    return Object.fromEntries(new URLSearchParams(location.hash.slice(1)))
  }

  const me = (token: string) =>
    fetch(`${server.base}/v1/me`, { headers: { authorization: `Bearer ${token}` } }).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as any
    }))

  it("runs its throwaway embedded PostgreSQL without fsync, as the test support starts every test server", () => {
    const command = readFileSync(join(dataDir, "pg", "data", "postmaster.opts"), "utf8")
    expect(command).toContain("fsync=off")
  })

  it("start → provider → callback → fragment → /v1/me signs the user in, with a personal org", async () => {
    await idp.runPromise(fake.signIn({ subject: "octo", email: "octo@example.test", name: "Octo Cat" }))
    const fragment = await signIn()
    expect(Object.keys(fragment).sort()).toEqual(["expiresAt", "subject", "token", "userId"])
    expect(fragment.subject).toBe("octo")
    const answer = await me(fragment.token!)
    expect(answer.status).toBe(200)
    expect(answer.body.user).toMatchObject({
      id: fragment.userId,
      provider: "idp",
      subject: "octo",
      email: "octo@example.test",
      name: "Octo Cat"
    })
    expect(answer.body.orgs).toEqual([expect.objectContaining({ personal: true, role: "admin" })])
  })

  it("a callback without the state cookie of the browser that started it is #error=state_mismatch", async () => {
    await idp.runPromise(fake.signIn({ subject: "planted" }))
    const start = await fetch(`${server.base}/v1/auth/idp/start?redirect=${encodeURIComponent(appCallback)}`, {
      redirect: "manual"
    })
    const page = await fetch(new URL(start.headers.get("location")!), { redirect: "manual" })
    const callback = await fetch(new URL(page.headers.get("location")!), { redirect: "manual" })
    expect(callback.status).toBe(302)
    const fragment = new URLSearchParams(new URL(callback.headers.get("location")!).hash.slice(1))
    expect(fragment.get("error")).toBe("state_mismatch")
    expect(fragment.get("token")).toBeNull()
  })

  it("an email the provider says is unverified is not linked to the user", async () => {
    await idp.runPromise(
      fake.signIn({ subject: "unverified", email: "someone-else@example.test", name: "Mallory", emailVerified: false })
    )
    const fragment = await signIn()
    const answer = await me(fragment.token!)
    expect(answer.status).toBe(200)
    expect(answer.body.user).toMatchObject({ subject: "unverified", email: null, name: "Mallory" })
  })

  it("the dev login is off: no one signs in but through the provider", async () => {
    const login = await fetch(`${server.base}/v1/auth/dev/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ subject: "intruder" })
    })
    expect(login.status).toBe(404)
  })
})
