import { Duration } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { client, type Client, startTestServer, type TestServer, unique } from "./support/TestServer.ts"

describe.each(backends)("spec 4.1 login and identity (%s)", (_name, stores) => {
  let server: TestServer
  let api: Client
  beforeAll(async () => {
    server = await startTestServer(stores())
    api = client(server.url)
  })
  afterAll(() => server.close())

  it("dev login answers a session with token, expiresAt, userId and subject", async () => {
    const subject = unique("alice")
    const reply = await api.post("/v1/auth/dev/login", { subject, email: "alice@example.test", name: "Alice" })
    expect(reply.status).toBe(200)
    expect(Object.keys(reply.body).sort()).toEqual(["expiresAt", "subject", "token", "userId"])
    expect(reply.body.subject).toBe(subject)
    expect(reply.body.userId).toMatch(/^usr_/)
    expect(reply.body.token).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const expires = Date.parse(reply.body.expiresAt) - Date.now()
    expect(expires).toBeGreaterThan(29 * 86_400_000)
    expect(expires).toBeLessThanOrEqual(30 * 86_400_000)
  })

  it("the same subject returns the same user, with a new session", async () => {
    const subject = unique("bob")
    const first = await api.login(subject)
    const second = await api.login(subject)
    expect(second.userId).toBe(first.userId)
    expect(second.token).not.toBe(first.token)
    const me = await api.get("/v1/me", { token: second.token })
    expect(me.body.orgs).toHaveLength(1)
    expect(me.body.orgs[0].personal).toBe(true)
  })

  it("a personal org without a name is named after the subject; a taken derived slug gets a suffix", async () => {
    const subject = unique("erin")
    const bare = await api.login(subject)
    const orgs = (await api.get("/v1/orgs", { token: bare.token })).body.items
    expect(orgs.map((org: { slug: string; name: string }) => [org.slug, org.name])).toEqual([[subject, subject]])
    const name = `Dave ${unique("d")}`
    const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, "-")
    const slugOf = async (token: string) => (await api.get("/v1/me", { token })).body.orgs[0].slug
    const derived = [await api.login(unique("dave"), { name }), await api.login(unique("dave"), { name })]
    expect(await slugOf(derived[0]!.token)).toBe(slug)
    expect(await slugOf(derived[1]!.token)).toMatch(new RegExp(`^${slug}-[a-z0-9]{1,5}$`))
  })

  it("a later login updates the profile it brings and keeps the rest", async () => {
    const subject = unique("frank")
    await api.login(subject, { name: "Frank" })
    const session = await api.login(subject, { email: "frank@example.test" })
    const me = await api.get("/v1/me", { token: session.token })
    expect(me.body.user).toMatchObject({ email: "frank@example.test", name: "Frank" })
  })

  it("first login creates a personal org where the caller is admin", async () => {
    const session = await api.login(unique("carol"), { name: "Carol Jones", email: "carol@example.test" })
    const me = await api.get("/v1/me", { token: session.token })
    expect(me.status).toBe(200)
    expect(me.body.user).toEqual({
      id: session.userId,
      provider: "dev",
      subject: session.subject,
      email: "carol@example.test",
      name: "Carol Jones"
    })
    expect(me.body.orgs).toHaveLength(1)
    expect(me.body.orgs[0]).toMatchObject({
      name: "Carol Jones",
      plan: "free",
      personal: true,
      role: "admin",
      projectLimit: 3
    })
    expect(me.body.orgs[0].slug).toMatch(/^carol-jones/)
    expect(Object.keys(me.body.orgs[0]).sort()).toEqual([
      "createdAt",
      "name",
      "personal",
      "plan",
      "projectLimit",
      "role",
      "slug"
    ])
  })

  it("dev login with a bad body is 400 bad_request with issues", async () => {
    const missing = await api.post("/v1/auth/dev/login", {})
    expect(missing.status).toBe(400)
    expect(missing.body.code).toBe("bad_request")
    expect(missing.body.details.issues[0].path).toEqual(["subject"])
    const wrongType = await api.post("/v1/auth/dev/login", { subject: 42 })
    expect(wrongType.status).toBe(400)
    expect(wrongType.body.code).toBe("bad_request")
  })

  it("GET /v1/me without a session is 401 unauthorized", async () => {
    const none = await api.get("/v1/me")
    expect(none.status).toBe(401)
    expect(none.body.code).toBe("unauthorized")
    const forged = await api.get("/v1/me", { token: "not-a-real-token" })
    expect(forged.status).toBe(401)
    expect(forged.body.code).toBe("unauthorized")
  })

  it("GET /v1/config needs no login and carries display names only", async () => {
    const reply = await api.get("/v1/config")
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({
      productName: "hostplane",
      publicUrl: "http://localhost:8080",
      appDomain: "apps.localhost",
      nameservers: ["ns1.hostplane.localhost", "ns2.hostplane.localhost"],
      siteUrl: "https://{host}/"
    })
  })

  it("idp start refuses a redirect outside the allowlist with 400", async () => {
    for (const redirect of ["https://evil.test/cb", "http://localhost:8080.evil.test/cb"]) {
      const reply = await api.get(`/v1/auth/idp/start?redirect=${encodeURIComponent(redirect)}`)
      expect(reply.status).toBe(400)
      expect(reply.body.code).toBe("bad_request")
    }
  })

  it("idp callback with an unknown state is 400", async () => {
    const reply = await api.get("/v1/auth/idp/callback?state=forged&code=abc")
    expect(reply.status).toBe(400)
    expect(reply.body.code).toBe("bad_request")
  })
})

describe.each(backends)("dev login is not registered when SERVICE_ENABLE_DEV_AUTH is off (%s)", (_name, stores) => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer(stores(), { identity: { devAuth: false } })
  })
  afterAll(() => server.close())

  it("POST /v1/auth/dev/login is 404 and absent from the OpenAPI document", async () => {
    const api = client(server.url)
    const reply = await api.post("/v1/auth/dev/login", { subject: "x" })
    expect(reply.status).toBe(404)
    expect(reply.body.code).toBe("not_found")
    const openapi = await api.get("/v1/openapi.json")
    expect(Object.keys(openapi.body.paths)).not.toContain("/v1/auth/dev/login")
    expect(Object.keys(openapi.body.paths)).toContain("/v1/me")
  })
})

describe.each(backends)("spec part 5: a session ends at its expiresAt (%s)", (_name, stores) => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer(stores(), { identity: { sessionTtl: Duration.seconds(1) } })
  })
  afterAll(() => server.close())

  it("before expiresAt the session works; after it every login route is 401 unauthorized, cached or not", async () => {
    const api = client(server.url)
    const session = await api.login(unique("brief"))
    const left = Date.parse(session.expiresAt) - Date.now()
    expect(left).toBeGreaterThan(0)
    expect(left).toBeLessThanOrEqual(1_000)
    const me = await api.get("/v1/me", { token: session.token })
    expect(me.status).toBe(200)
    const slug = me.body.orgs[0].slug
    // A second use, so the authorization cache holds the session before it ends.
    expect((await api.get(`/v1/orgs/${slug}/projects`, { token: session.token })).status).toBe(200)
    await new Promise((resolve) => setTimeout(resolve, Date.parse(session.expiresAt) - Date.now() + 50))
    for (const reply of [
      await api.get("/v1/me", { token: session.token }),
      await api.get(`/v1/orgs/${slug}/projects`, { token: session.token }),
      await api.post(`/v1/orgs/${slug}/projects`, { name: "late" }, { token: session.token })
    ]) {
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 401, code: "unauthorized" })
      expect(reply.headers.get("www-authenticate")).toContain('error="invalid_token"')
    }
    const again = await api.login(session.subject)
    expect((await api.get("/v1/me", { token: again.token })).body.user.id).toBe(session.userId)
    expect((await api.get(`/v1/orgs/${slug}/projects`, { token: again.token })).body.items).toEqual([])
  })
})
