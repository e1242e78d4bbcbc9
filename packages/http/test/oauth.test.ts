import { IdentityProviderOAuth } from "@hostplane/adapters-providers"
import { FakeIdentityProvider } from "@hostplane/testkit"
import { Effect, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { client, type Client, startTestServer, type TestServer, unique } from "./support/TestServer.ts"

const appCallback = "http://app.test/signed-in"

describe.each(backends)("spec 4.1 identity-provider sign-in (%s)", (_name, stores) => {
  let idp: ManagedRuntime.ManagedRuntime<FakeIdentityProvider, never>
  let fake: FakeIdentityProvider["Service"]
  let server: TestServer
  let api: Client
  beforeAll(async () => {
    idp = ManagedRuntime.make(FakeIdentityProvider.layer())
    fake = await idp.runPromise(Effect.service(FakeIdentityProvider))
    server = await startTestServer(
      stores(),
      { identity: { oauthRedirects: ["http://app.test/"] } },
      undefined,
      undefined,
      {
        providers: [
          IdentityProviderOAuth.layer({
            authorizeUrl: fake.authorizeUrl,
            tokenUrl: fake.tokenUrl,
            userinfoUrl: fake.userinfoUrl,
            clientId: fake.clientId,
            clientSecret: fake.clientSecret ?? undefined
          })
        ]
      }
    )
    api = client(server.url)
  })
  afterAll(async () => {
    await server.close()
    await idp.dispose()
  })

  /** The state cookie start set, by the callback query it belongs to: the browser that started each sign-in. */
  const browsers = new Map<string, string>()

  /** Runs start and the provider's authorize page; answers our callback's query (code and state). */
  const authorize = async (redirect = appCallback) => {
    const start = await api.get(`/v1/auth/idp/start?redirect=${encodeURIComponent(redirect)}`)
    expect(start.status).toBe(302)
    const cookie = (start.headers.get("set-cookie") ?? "").split(";")[0]!
    const authorizeUrl = new URL(start.headers.get("location")!)
    expect(`${authorizeUrl.origin}${authorizeUrl.pathname}`).toBe(fake.authorizeUrl)
    expect(authorizeUrl.searchParams.get("code_challenge_method")).toBe("S256")
    const page = await fetch(authorizeUrl, { redirect: "manual" })
    expect(page.status).toBe(302)
    const back = new URL(page.headers.get("location")!)
    expect(back.pathname).toBe("/v1/auth/idp/callback")
    browsers.set(back.search, cookie)
    return back.search
  }
  /** The provider sends the browser that started the sign-in back to our callback, with its cookie. */
  const finish = (query: string) =>
    api.get(`/v1/auth/idp/callback${query}`, { headers: { cookie: browsers.get(query) ?? "" } })
  const fragmentOf = (location: string) => {
    const url = new URL(location)
    return { base: `${url.origin}${url.pathname}`, values: Object.fromEntries(new URLSearchParams(url.hash.slice(1))) }
  }

  it("start redirects to the provider; the callback redirects with token, expiresAt, userId, subject in the fragment", async () => {
    const subject = unique("octo")
    await idp.runPromise(fake.signIn({ subject, email: `${subject}@example.test`, name: "Octo Cat" }))
    const query = await authorize()
    const callback = await finish(query)
    expect(callback.status).toBe(302)
    expect(callback.headers.get("cache-control")).toBe("no-store")
    const { base, values } = fragmentOf(callback.headers.get("location")!)
    expect(base).toBe(appCallback)
    expect(Object.keys(values).sort()).toEqual(["expiresAt", "subject", "token", "userId"])
    expect(values.subject).toBe(subject)
    const me = await api.get("/v1/me", { token: values.token! })
    expect(me.status).toBe(200)
    expect(me.body.user).toMatchObject({ id: values.userId, provider: "idp", subject, name: "Octo Cat" })
    expect(me.body.orgs).toEqual([expect.objectContaining({ personal: true, role: "admin" })])
  })

  it("signing in again with the same subject returns the same user", async () => {
    const subject = unique("again")
    await idp.runPromise(fake.signIn({ subject }))
    const first = fragmentOf((await finish(await authorize())).headers.get("location")!)
    const second = fragmentOf((await finish(await authorize())).headers.get("location")!)
    expect(second.values.userId).toBe(first.values.userId)
  })

  it("a state is single use: replaying the callback is 400", async () => {
    await idp.runPromise(fake.signIn({ subject: unique("replay") }))
    const query = await authorize()
    expect((await finish(query)).status).toBe(302)
    const replay = await finish(query)
    expect(replay.status).toBe(400)
    expect(replay.body.code).toBe("bad_request")
  })

  it("a forged state is 400 and never reaches the provider's token endpoint", async () => {
    const before = await idp.runPromise(fake.stats)
    const forged = await api.get(`/v1/auth/idp/callback?state=${"A".repeat(43)}&code=stolen`)
    expect(forged.status).toBe(400)
    expect((await idp.runPromise(fake.stats)).token).toBe(before.token)
  })

  it("a redirect outside SERVICE_OAUTH_REDIRECTS is 400", async () => {
    for (const redirect of ["http://app.test.evil.test/cb", "https://elsewhere.test/", "http://localhost:8080/"]) {
      const reply = await api.get(`/v1/auth/idp/start?redirect=${encodeURIComponent(redirect)}`)
      expect(reply.status).toBe(400)
    }
  })

  it("a native app's loopback redirect (RFC 8252) is allowed on any port; look-alikes are 400", async () => {
    const subject = unique("native")
    await idp.runPromise(fake.signIn({ subject }))
    const loopback = "http://127.0.0.1:49321/callback/n0nce"
    const callback = await finish(await authorize(loopback))
    const { base, values } = fragmentOf(callback.headers.get("location")!)
    expect(base).toBe(loopback)
    expect(values.subject).toBe(subject)
    for (const port of [1, 8080, 65535]) {
      expect((await api.get(`/v1/auth/idp/start?redirect=${encodeURIComponent(`http://[::1]:${port}/`)}`)).status).toBe(
        302
      )
    }
    for (const redirect of [
      "http://127.0.0.1/cb",
      "http://127.0.0.1:0/cb",
      "http://127.0.0.1:65536/cb",
      "https://127.0.0.1:8443/cb",
      "http://127.0.0.1:8080@evil.test/cb",
      "http://127.0.0.1:8080\\@evil.test/",
      "http://127.0.0.1.evil.test:8080/cb",
      "http://127.0.0.2:8080/cb",
      "http://localhost:8080/cb",
      "http://127.0.0.1:8080"
    ]) {
      const reply = await api.get(`/v1/auth/idp/start?redirect=${encodeURIComponent(redirect)}`)
      expect(reply.status, redirect).toBe(400)
    }
  })

  it("a sign-in the provider denies comes back as #error=<code>&message=<text>", async () => {
    await idp.runPromise(fake.denyNext)
    const query = await authorize()
    expect(new URLSearchParams(query).get("error")).toBe("access_denied")
    const callback = await finish(query)
    expect(callback.status).toBe(302)
    const { base, values } = fragmentOf(callback.headers.get("location")!)
    expect(base).toBe(appCallback)
    expect(values.error).toBe("access_denied")
    expect(values.message).toBeTruthy()
    expect(values.token).toBeUndefined()
  })

  it("a code the provider refuses comes back as #error=exchange_failed", async () => {
    await idp.runPromise(fake.signIn({ subject: unique("refused") }))
    const query = await authorize()
    await idp.runPromise(fake.answerNext("token", { status: 400, body: { error: "invalid_grant" } }))
    const callback = await finish(query)
    expect(callback.status).toBe(302)
    expect(fragmentOf(callback.headers.get("location")!).values).toMatchObject({ error: "exchange_failed" })
  })

  it("a redirect beyond Latin-1 comes back percent-encoded in Location, not as a broken 500", async () => {
    const subject = unique("snow")
    await idp.runPromise(fake.signIn({ subject }))
    const callback = await finish(await authorize("http://app.test/☃?x=é"))
    expect(callback.status).toBe(302)
    const location = callback.headers.get("location")!
    expect(location).toMatch(/^http:\/\/app\.test\/%E2%98%83\?x=%C3%A9#token=/)
    expect(fragmentOf(location).values.subject).toBe(subject)
  })

  it("the state is bound to the browser that started sign-in: a missing or different cookie fails with #error=state_mismatch", async () => {
    await idp.runPromise(fake.signIn({ subject: unique("csrf") }))
    const start = await api.get(`/v1/auth/idp/start?redirect=${encodeURIComponent(appCallback)}`)
    const setCookie = start.headers.get("set-cookie")!
    expect(setCookie).toMatch(/^hostplane_oauth=[A-Za-z0-9_-]{43}; /)
    expect(setCookie).toContain("HttpOnly")
    expect(setCookie).toContain("SameSite=Lax")
    // An attacker's own sign-in, planted in a victim's browser, arrives without the attacker's cookie.
    const planted = await authorize()
    const tokensBefore = (await idp.runPromise(fake.stats)).token
    const victim = await api.get(`/v1/auth/idp/callback${planted}`)
    expect(victim.status).toBe(302)
    const { base, values } = fragmentOf(victim.headers.get("location")!)
    expect(base).toBe(appCallback)
    expect(values.error).toBe("state_mismatch")
    expect(values.token).toBeUndefined()
    expect((await idp.runPromise(fake.stats)).token).toBe(tokensBefore)
    const other = await authorize()
    const foreign = await api.get(`/v1/auth/idp/callback${other}`, { headers: { cookie: browsers.get(planted)! } })
    expect(fragmentOf(foreign.headers.get("location")!).values.error).toBe("state_mismatch")
    // The state is used up either way: the rightful browser cannot finish it afterwards.
    expect((await finish(planted)).status).toBe(400)
  })
})
