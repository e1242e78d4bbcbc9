import * as Pg from "@hostplane/adapters-pg"
import { layer as pgDatabase } from "@hostplane/adapters-pg/PgDatabase"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { Identity } from "@hostplane/core"
import { type Duration, Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cachedMe } from "../src/identity/CachedMe.ts"
import { backends } from "./support/backends.ts"
import { countingProxy } from "./support/CountingProxy.ts"
import { client, type Client, startTestServer, type TestServer, unique } from "./support/TestServer.ts"

// Bearer lookups and memberships are cached; a write is seen at once by the process that made it, and by
// every other process within a second (PostgreSQL LISTEN/NOTIFY), whatever the cache's TTL. A warm GET /v1/me is
// answered from the cache before the router: it must send what the endpoint sends, and anything the shortcut does
// not vouch for must go the whole way.

const meOf = async (api: Client, token: string) => {
  const reply = await api.get("/v1/me", { token })
  return reply
}

const raw = async (url: string, authorization: string | undefined) => {
  const response = await fetch(`${url}/v1/me`, authorization === undefined ? {} : { headers: { authorization } })
  const headers = Object.fromEntries(
    [...response.headers].filter(([name]) => name !== "x-request-id" && name !== "date" && name !== "keep-alive")
  )
  return { status: response.status, headers, bytes: Buffer.from(await response.arrayBuffer()) }
}

const roleIn = (me: { orgs: ReadonlyArray<{ slug: string; role: string }> }, slug: string) =>
  me.orgs.find((org) => org.slug === slug)?.role

describe.each(backends)("auth cache, one server (%s)", (_name, stores) => {
  let server: TestServer
  let api: Client
  beforeAll(async () => {
    // A TTL far beyond the test: only invalidation can explain a fresh answer.
    server = await startTestServer(
      stores().pipe(Layer.provide(Layer.succeed(Identity.AuthCacheSettings, { ttl: "10 minutes" })))
    )
    api = client(server.url)
  })
  afterAll(() => server.close())

  it("a revoked access token is refused at once by the server that revoked it, though it was just used", async () => {
    const user = await api.login(unique("pat"))
    const created = await api.post("/v1/me/tokens", { name: "ci" }, { token: user.token })
    expect((await meOf(api, created.body.token)).status).toBe(200)
    expect((await meOf(api, created.body.token)).status).toBe(200)
    expect((await api.delete(`/v1/me/tokens/${created.body.id}`, undefined, { token: user.token })).status).toBe(204)
    const after = await meOf(api, created.body.token)
    expect(after.status).toBe(401)
    expect(after.body.code).toBe("unauthorized")
    expect((await meOf(api, user.token)).status).toBe(200)
  })

  it("a role change, a rename, a removal and a new org show in /v1/me at once", async () => {
    const admin = await api.login(unique("admin"))
    const member = await api.login(unique("member"))
    const slug = unique("org")
    expect((await api.post("/v1/orgs", { name: "Cached", slug }, { token: admin.token })).status).toBe(201)
    expect(roleIn((await meOf(api, admin.token)).body, slug)).toBe("admin")
    expect(roleIn((await meOf(api, member.token)).body, slug)).toBeUndefined()
    const added = await api.post(
      `/v1/orgs/${slug}/members`,
      { provider: "dev", subject: member.subject, role: "viewer" },
      { token: admin.token }
    )
    expect(added.status).toBe(201)
    expect(roleIn((await meOf(api, member.token)).body, slug)).toBe("viewer")
    const put = await api.put(`/v1/orgs/${slug}/members/${member.userId}`, { role: "member" }, { token: admin.token })
    expect(put.status).toBe(200)
    expect(roleIn((await meOf(api, member.token)).body, slug)).toBe("member")
    expect((await api.patch(`/v1/orgs/${slug}`, { name: "Renamed" }, { token: admin.token })).status).toBe(200)
    const renamed = (await meOf(api, member.token)).body.orgs.find((org: { slug: string }) => org.slug === slug)
    expect(renamed.name).toBe("Renamed")
    expect(
      (await api.delete(`/v1/orgs/${slug}/members/${member.userId}`, undefined, { token: admin.token })).status
    ).toBe(204)
    expect(roleIn((await meOf(api, member.token)).body, slug)).toBeUndefined()
    expect((await api.delete(`/v1/orgs/${slug}`, { confirm: slug }, { token: admin.token })).status).toBe(204)
    expect(roleIn((await meOf(api, admin.token)).body, slug)).toBeUndefined()
  })

  it("a new sign-in's profile shows in /v1/me of the user's other sessions at once", async () => {
    const subject = unique("profile")
    const first = await api.login(subject, { name: "Before" })
    expect((await meOf(api, first.token)).body.user.name).toBe("Before")
    await api.login(subject, { name: "After" })
    expect((await meOf(api, first.token)).body.user.name).toBe("After")
  })

  const shortcut = (authorization: string | undefined) =>
    server.run(
      Effect.flatMap(cachedMe, (answer) =>
        answer(
          HttpServerRequest.fromWeb(
            new Request(`${server.url}/v1/me`, authorization === undefined ? {} : { headers: { authorization } })
          )
        )
      )
    )

  // The endpoint's answer once the cache keeps it: a write's echo on PostgreSQL's change feed may arrive while the
  // first load after it runs, and that load then rightly keeps nothing, so the next one fills the cache.
  const warmUp = async (authorization: string) => {
    for (let attempt = 0; ; attempt++) {
      const reply = await raw(server.url, authorization)
      if ((await shortcut(authorization)) !== undefined || attempt === 20) return reply
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }

  it("answers a warm session with the endpoint's own status, headers and bytes, and a cold one not at all", async () => {
    const user = await api.login(unique("warm"), { name: "Zoë \u2603", email: "zoe@example.com" })
    for (const slug of [unique("org-a"), unique("org-b")]) {
      expect((await api.post("/v1/orgs", { name: `Org ${slug}`, slug }, { token: user.token })).status).toBe(201)
    }
    const bearer = `Bearer ${user.token}`
    // Cold: the session was never read, so the endpoint answers (and fills the cache).
    expect(await shortcut(bearer)).toBeUndefined()
    const cold = await warmUp(bearer)
    expect(cold.status).toBe(200)
    expect(JSON.parse(cold.bytes.toString()).orgs).toHaveLength(3)
    // Warm: the shortcut answers, over HTTP byte for byte what the endpoint sent.
    const answered = await shortcut(bearer)
    expect(answered?.status).toBe(200)
    const warm = await raw(server.url, bearer)
    expect(warm).toEqual(cold)
    // A change forgets the entry: the next request goes the whole way and shows it.
    const slug = JSON.parse(cold.bytes.toString()).orgs[1].slug
    expect((await api.patch(`/v1/orgs/${slug}`, { name: "Renamed" }, { token: user.token })).status).toBe(200)
    expect(await shortcut(bearer)).toBeUndefined()
    const renamed = await warmUp(bearer)
    expect(JSON.parse(renamed.bytes.toString()).orgs[1].name).toBe("Renamed")
    expect((await shortcut(bearer))?.status).toBe(200)
    expect(await raw(server.url, bearer)).toEqual(renamed)
  })

  it("leaves to the endpoint what it does not vouch for", async () => {
    const user = await api.login(unique("other"))
    expect((await warmUp(`Bearer ${user.token}`)).status).toBe(200)
    expect((await shortcut(`Bearer ${user.token}`))?.status).toBe(200)
    // Other spellings of the scheme are the endpoint's to read (and they work).
    for (const authorization of [`bearer ${user.token}`, `Bearer  ${user.token}`]) {
      expect(await shortcut(authorization)).toBeUndefined()
      expect((await raw(server.url, authorization)).status).toBe(200)
    }
    // No header, an unknown token, an empty one: the endpoint's 401 with its challenge.
    for (const authorization of [undefined, "Bearer nope", "Bearer "]) {
      expect(await shortcut(authorization)).toBeUndefined()
      const refused = await raw(server.url, authorization)
      expect(refused.status).toBe(401)
      expect(refused.headers["www-authenticate"]).toMatch(/^Bearer realm="hostplane"/)
    }
    // A personal access token's use is recorded by the endpoint's authentication, so it is never answered here.
    const pat = await api.post("/v1/me/tokens", { name: "ci" }, { token: user.token })
    expect(pat.status).toBe(201)
    for (let i = 0; i < 2; i++) expect((await raw(server.url, `Bearer ${pat.body.token}`)).status).toBe(200)
    expect(await shortcut(`Bearer ${pat.body.token}`)).toBeUndefined()
    // A query string or a trailing slash goes the whole way too.
    for (const path of ["/v1/me?x=1", "/v1/me/"]) {
      const reply = await api.get(path, { token: user.token })
      expect(reply.status).toBe(200)
      expect(reply.body.user.id).toBe(user.userId)
    }
  })
})

describe("auth cache on PostgreSQL", () => {
  const database = ManagedRuntime.make(TestDatabase.layer)
  let url: Redacted.Redacted<string>
  beforeAll(async () => {
    url = (await database.runPromise(Effect.service(TestDatabase))).url
  })
  afterAll(() => database.dispose())

  /** A full server on the shared database, with its own pool, cache and change feed. */
  const serverOn = (databaseUrl: Redacted.Redacted<string>, ttl: Duration.Input) =>
    startTestServer(
      Pg.layer.pipe(
        Layer.provideMerge(pgDatabase(databaseUrl)),
        Layer.provide(Layer.succeed(Identity.AuthCacheSettings, { ttl }))
      )
    )

  /** Polls until `check` holds; answers the milliseconds it took, or fails after `limitMs`. */
  const within = async (limitMs: number, check: () => Promise<boolean>) => {
    const start = performance.now()
    while (!(await check())) {
      if (performance.now() - start > limitMs) throw new Error(`not within ${limitMs} ms`)
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    return performance.now() - start
  }

  it("two servers on one database: a token revoked or a role changed on one is seen by the other within a second", async () => {
    // Ten minutes of TTL: only the change feed can make the second server forget in time.
    const [one, two] = await Promise.all([serverOn(url, "10 minutes"), serverOn(url, "10 minutes")])
    try {
      const apiOne = client(one.url)
      const apiTwo = client(two.url)
      const admin = await apiOne.login(unique("admin"))
      const member = await apiOne.login(unique("member"))
      const slug = unique("org")
      await apiOne.post("/v1/orgs", { name: "Two", slug }, { token: admin.token })
      await apiOne.post(
        `/v1/orgs/${slug}/members`,
        { provider: "dev", subject: member.subject, role: "viewer" },
        { token: admin.token }
      )
      const pat = (await apiOne.post("/v1/me/tokens", { name: "ci" }, { token: member.token })).body

      // Both servers hold the session, the token and the memberships.
      for (const api of [apiOne, apiTwo]) {
        expect(roleIn((await meOf(api, member.token)).body, slug)).toBe("viewer")
        expect((await meOf(api, pat.token)).status).toBe(200)
      }

      await apiOne.put(`/v1/orgs/${slug}/members/${member.userId}`, { role: "admin" }, { token: admin.token })
      expect(roleIn((await meOf(apiOne, member.token)).body, slug)).toBe("admin")
      await within(1000, async () => roleIn((await meOf(apiTwo, member.token)).body, slug) === "admin")

      expect((await apiOne.delete(`/v1/me/tokens/${pat.id}`, undefined, { token: member.token })).status).toBe(204)
      expect((await meOf(apiOne, pat.token)).status).toBe(401)
      const tookMs = await within(1000, async () => (await meOf(apiTwo, pat.token)).status === 401)
      expect(tookMs).toBeLessThan(1000)
      // ... and stays refused.
      expect((await meOf(apiTwo, pat.token)).status).toBe(401)

      // The member removed on the second server is gone from the first's answer within a second.
      await apiTwo.delete(`/v1/orgs/${slug}/members/${member.userId}`, undefined, { token: admin.token })
      await within(1000, async () => roleIn((await meOf(apiOne, member.token)).body, slug) === undefined)
    } finally {
      await Promise.all([one.close(), two.close()])
    }
  })

  it("GET /v1/me makes one database round trip when cold (shared by concurrent requests) and none when warm", async () => {
    const proxy = await countingProxy(new URL(Redacted.value(url)))
    const server = await serverOn(proxy.url, "10 minutes")
    try {
      const api = client(server.url)
      const admin = await api.login(unique("queries"))
      await api.post("/v1/orgs", { name: "Counted", slug: unique("org") }, { token: admin.token })
      // The write's own NOTIFY comes back through the listener later and forgets the user again; under load it can
      // land after the cold read below. Wait out the one-second bound of that feed first.
      await new Promise((resolve) => setTimeout(resolve, 1500))
      // A write forgot the user: this request is cold.
      proxy.statements.length = 0
      const cold = await meOf(api, admin.token)
      expect(cold.status).toBe(200)
      expect(cold.body.orgs).toHaveLength(2)
      expect(proxy.requestStatements(), proxy.statements.join("\n---\n")).toHaveLength(1)
      proxy.statements.length = 0
      for (let i = 0; i < 20; i++) expect((await meOf(api, admin.token)).body).toEqual(cold.body)
      expect(proxy.requestStatements(), proxy.statements.join("\n---\n")).toEqual([])
      // Another session of the user, never read: 20 concurrent cold requests share one read.
      const again = await api.login(admin.subject)
      await new Promise((resolve) => setTimeout(resolve, 1500))
      proxy.statements.length = 0
      const concurrent = await Promise.all(Array.from({ length: 20 }, () => meOf(api, again.token)))
      expect(concurrent.map((reply) => reply.status)).toEqual(Array.from({ length: 20 }, () => 200))
      expect(proxy.requestStatements(), proxy.statements.join("\n---\n")).toHaveLength(1)
    } finally {
      await server.close()
      await proxy.close()
    }
  })
})
