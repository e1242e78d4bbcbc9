import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { client, type Client, startTestServer, type TestServer, unique } from "./support/TestServer.ts"

describe.each(backends)("wire conventions (%s)", (_name, stores) => {
  let server: TestServer
  let api: Client
  let token: string
  beforeAll(async () => {
    server = await startTestServer(stores())
    api = client(server.url)
    token = (await api.login(unique("wire"))).token
  })
  afterAll(() => server.close())

  it("malformed JSON is 400 bad_request and writes nothing", async () => {
    const slug = unique("broken")
    const reply = await api.call("POST", "/v1/orgs", { token, raw: `{"name": "x", "slug": "${slug}"` })
    expect(reply.status).toBe(400)
    expect(reply.body.code).toBe("bad_request")
    const list = await api.get("/v1/orgs", { token })
    expect(list.body.items.map((o: { slug: string }) => o.slug)).not.toContain(slug)
  })

  it("a wrong type is 400 with details.issues [{ path, message }]", async () => {
    const reply = await api.post("/v1/orgs", { name: 12 }, { token })
    expect(reply.status).toBe(400)
    expect(reply.body.code).toBe("bad_request")
    expect(reply.body.details.issues).toEqual([{ path: ["name"], message: expect.any(String) }])
  })

  it("a body over 1 MiB is 413 payload_too_large", async () => {
    const reply = await api.post("/v1/orgs", { name: "x".repeat(1_100_000) }, { token })
    expect(reply.status).toBe(413)
    expect(reply.body.code).toBe("payload_too_large")
  })

  it("an unknown route is 404 not_found and a wrong method 405 method_not_allowed", async () => {
    const missing = await api.get("/v1/nothing-here", { token })
    expect(missing.status).toBe(404)
    expect(missing.body.code).toBe("not_found")
    const wrong = await api.call("PUT", "/v1/orgs", { token, body: {} })
    expect(wrong.status).toBe(405)
    expect(wrong.body.code).toBe("method_not_allowed")
    expect(wrong.headers.get("allow")).toContain("GET")
  })

  it("a 401 carries WWW-Authenticate: Bearer realm=hostplane, with error=invalid_token when a token was sent", async () => {
    const none = await api.get("/v1/me")
    expect(none.status).toBe(401)
    expect(none.headers.get("www-authenticate")).toBe('Bearer realm="hostplane"')
    const stale = await api.post("/v1/orgs", { name: "x" }, { token: "not-a-session" })
    expect(stale.status).toBe(401)
    expect(stale.headers.get("www-authenticate")).toBe('Bearer realm="hostplane", error="invalid_token"')
    expect((await api.get("/v1/me", { token })).headers.get("www-authenticate")).toBeNull()
  })

  it("the session of a dev login is Cache-Control: no-store; ordinary answers are not", async () => {
    const reply = await api.call("POST", "/v1/auth/dev/login", { body: { subject: unique("nostore") } })
    expect(reply.status).toBe(200)
    expect(reply.headers.get("cache-control")).toBe("no-store")
    expect(Object.keys(reply.body).sort()).toEqual(["expiresAt", "subject", "token", "userId"])
    expect((await api.get("/v1/me", { token })).headers.get("cache-control")).toBeNull()
  })

  it("every response carries X-Request-Id, and a sane incoming one is kept", async () => {
    const plain = await api.get("/v1/config")
    expect(plain.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{32}$/)
    const failing = await api.get("/v1/me")
    expect(failing.headers.get("x-request-id")).toMatch(/^req_/)
    const echoed = await api.get("/v1/config", { headers: { "x-request-id": "trace-12345678" } })
    expect(echoed.headers.get("x-request-id")).toBe("trace-12345678")
  })

  it("GET /v1/openapi.json is OpenAPI 3.1 and GET /v1/docs renders the reference", async () => {
    const openapi = await api.get("/v1/openapi.json")
    expect(openapi.status).toBe(200)
    expect(openapi.body.openapi).toMatch(/^3\.1/)
    expect(Object.keys(openapi.body.paths)).toEqual(
      expect.arrayContaining(["/v1/orgs", "/v1/orgs/{orgSlug}/members", "/v1/invites/{token}/accept"])
    )
    const docs = await api.get("/v1/docs")
    expect(docs.status).toBe(200)
    expect(docs.headers.get("content-type")).toContain("text/html")
    // Scalar's script itself, read from Effect's package for the page, and the document it renders.
    expect(docs.body as string).toContain("@scalar/api-reference")
    expect(docs.body as string).toContain('"openapi":"3.1')
  })

  it("every project-scoped route declares the same orgSlug and projectName parameters, with the name pattern", async () => {
    const openapi = await api.get("/v1/openapi.json")
    const described = new Set<string>()
    for (const [path, operations] of Object.entries<Record<string, any>>(openapi.body.paths)) {
      if (!path.includes("/projects/{projectName}")) continue
      for (const operation of Object.values(operations)) {
        for (const parameter of operation.parameters.filter((p: any) => p.in === "path" && p.name !== "host")) {
          if (parameter.name === "orgSlug" || parameter.name === "projectName") {
            described.add(`${parameter.name} ${parameter.schema.description ?? parameter.description}`)
          }
        }
      }
    }
    expect([...described].sort()).toEqual([
      "orgSlug The organization's slug (`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`).",
      "projectName The project's name (`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)."
    ])
  })
})
