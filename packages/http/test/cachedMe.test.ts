import { Identity } from "@hostplane/core"
import { Effect, Layer } from "effect"
import { HttpServerRequest } from "effect/http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cachedMe } from "../src/identity/CachedMe.ts"
import { backends } from "./support/backends.ts"
import { client, type Client, startTestServer, type TestServer, unique } from "./support/TestServer.ts"

// Issue 13: a warm GET /v1/me is answered from the auth cache before the router. It must send what the endpoint
// sends, and anything the shortcut does not vouch for must go the whole way.

const raw = async (url: string, authorization: string | undefined) => {
  const response = await fetch(`${url}/v1/me`, authorization === undefined ? {} : { headers: { authorization } })
  const headers = Object.fromEntries(
    [...response.headers].filter(([name]) => name !== "x-request-id" && name !== "date" && name !== "keep-alive")
  )
  return { status: response.status, headers, bytes: Buffer.from(await response.arrayBuffer()) }
}

describe.each(backends)("GET /v1/me from the auth cache (%s)", (_name, stores) => {
  let server: TestServer
  let api: Client
  beforeAll(async () => {
    // A TTL far beyond the test: an entry ends only by a change.
    server = await startTestServer(
      stores().pipe(Layer.provide(Layer.succeed(Identity.AuthCacheSettings, { ttl: "10 minutes" })))
    )
    api = client(server.url)
  })
  afterAll(() => server.close())

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

  it("answers a warm session with the endpoint's own status, headers and bytes, and a cold one not at all", async () => {
    const user = await api.login(unique("warm"), { name: "Zoë \u2603", email: "zoe@example.com" })
    for (const slug of [unique("org-a"), unique("org-b")]) {
      expect((await api.post("/v1/orgs", { name: `Org ${slug}`, slug }, { token: user.token })).status).toBe(201)
    }
    const bearer = `Bearer ${user.token}`
    // Cold: the session was never read, so the endpoint answers (and fills the cache).
    expect(await shortcut(bearer)).toBeUndefined()
    const cold = await raw(server.url, bearer)
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
    const renamed = await raw(server.url, bearer)
    expect(JSON.parse(renamed.bytes.toString()).orgs[1].name).toBe("Renamed")
    expect((await shortcut(bearer))?.status).toBe(200)
    expect(await raw(server.url, bearer)).toEqual(renamed)
  })

  it("leaves to the endpoint what it does not vouch for", async () => {
    const user = await api.login(unique("other"))
    expect((await raw(server.url, `Bearer ${user.token}`)).status).toBe(200)
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
