import type { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Api } from "../src/Api.ts"
import { specRoleOf } from "./support/specRoles.ts"
import { backends } from "./support/backends.ts"
import { client, type Client, startTestServer, type TestServer, unique } from "./support/TestServer.ts"

// decisions.md part 12: authorization (404, 403) before the body's validation (400). The framework refuses a bad body,
// query or parameter before a handler runs, so every org route is driven here with input it refuses, by an outsider,
// a viewer, a member and an admin of the org.

interface OrgRoute {
  readonly method: string
  readonly template: string
  readonly payload: boolean
  readonly query: boolean
}

const orgRoutes: ReadonlyArray<OrgRoute> = Object.values(Api.groups as Record<string, HttpApiGroup.Constraint>)
  .flatMap((group) => Object.values(group.endpoints as Record<string, HttpApiEndpoint.Top>))
  .filter((endpoint) => endpoint.path.includes(":orgSlug"))
  .map((endpoint) => ({
    method: endpoint.method,
    template: endpoint.path,
    payload: endpoint.payload.size > 0,
    query: endpoint.query !== undefined
  }))

const refusable = orgRoutes.filter((route) => route.payload)

describe("the org routes with a body", () => {
  it("are many", () => {
    expect(refusable.length).toBeGreaterThan(30)
  })
})

describe.each(backends)("authorization before input validation (%s)", (_name, stores) => {
  let server: TestServer
  let api: Client
  let org: string
  let admin: string
  let viewer: string
  let member: string
  let outsider: string
  beforeAll(async () => {
    server = await startTestServer(stores())
    api = client(server.url)
    const owner = await api.login(unique("owner"))
    const low = await api.login(unique("viewer"))
    const middle = await api.login(unique("member"))
    admin = owner.token
    viewer = low.token
    member = middle.token
    outsider = (await api.login(unique("outsider"))).token
    org = unique("org")
    expect((await api.post("/v1/orgs", { name: "Order", slug: org }, { token: admin })).status).toBe(201)
    expect((await api.post(`/v1/orgs/${org}/projects`, { name: "site" }, { token: admin })).status).toBe(201)
    const added = await api.post(
      `/v1/orgs/${org}/members`,
      { provider: "dev", subject: low.subject, role: "viewer" },
      { token: admin }
    )
    expect(added.status).toBe(201)
    const joined = await api.post(
      `/v1/orgs/${org}/members`,
      { provider: "dev", subject: middle.subject, role: "member" },
      { token: admin }
    )
    expect(joined.status).toBe(201)
  })
  afterAll(() => server.close())

  const pathOf = (template: string, orgSlug: string, projectName = "site") =>
    template
      .replace(":orgSlug", orgSlug)
      .replace(":projectName", projectName)
      .replace(/:[A-Za-z]+/g, "x")

  /** A malformed JSON body (a bundle route: the wrong content type). */
  const refused = (route: OrgRoute, path: string, token: string) =>
    api.call(route.method, path, { token, raw: "{", headers: { "content-type": "application/json" } })

  it("an outsider gets 404 for malformed input on every org route with a body, never 400 or 415", async () => {
    const statuses: Record<string, number> = {}
    for (const route of refusable) {
      statuses[`${route.method} ${route.template}`] = (
        await refused(route, pathOf(route.template, org), outsider)
      ).status
    }
    expect(Object.entries(statuses).filter(([, status]) => status !== 404)).toEqual([])
  })

  it("a project of another org, or none, is 404 before its input is read", async () => {
    for (const route of refusable.filter((r) => r.template.includes(":projectName"))) {
      const reply = await refused(route, pathOf(route.template, org, "nope"), admin)
      expect([`${route.method} ${route.template}`, reply.status]).toEqual([`${route.method} ${route.template}`, 404])
    }
  })

  it("a viewer gets 403 where the route needs more, and the input's 400 or 415 where it does not", async () => {
    for (const route of refusable) {
      const reply = await refused(route, pathOf(route.template, org), viewer)
      const needsMore = specRoleOf(route.method, route.template) !== "viewer"
      const name = `${route.method} ${route.template}`
      if (needsMore) expect([name, reply.status]).toEqual([name, 403])
      else expect([name, [400, 404, 415].includes(reply.status)]).toEqual([name, true])
    }
  })

  it("a member gets 403 where the route needs an admin, and the input's 400 or 415 where it does not", async () => {
    const adminOnly = refusable.filter((route) => specRoleOf(route.method, route.template) === "admin")
    expect(adminOnly.length).toBeGreaterThan(10)
    for (const route of refusable) {
      const reply = await refused(route, pathOf(route.template, org), member)
      const name = `${route.method} ${route.template}`
      if (adminOnly.includes(route)) expect([name, reply.status]).toEqual([name, 403])
      else expect([name, [400, 404, 415].includes(reply.status)]).toEqual([name, true])
    }
  })

  it("an admin gets the input's own refusal, with its envelope", async () => {
    for (const route of refusable) {
      const reply = await refused(route, pathOf(route.template, org), admin)
      const name = `${route.method} ${route.template}`
      expect([name, [400, 404, 415].includes(reply.status)]).toEqual([name, true])
      if (reply.status !== 404) expect(["bad_request", "unsupported_media_type"]).toContain(reply.body.code)
    }
  })

  it("a bad query and a body with text the API refuses are checked after authorization too", async () => {
    const ledger = `/v1/orgs/${org}/ai/ledger?limit=abc`
    expect((await api.get(ledger, { token: outsider })).status).toBe(404)
    expect((await api.get(ledger, { token: viewer })).status).toBe(403)
    expect((await api.get(ledger, { token: admin })).status).toBe(400)
    const secret = `/v1/orgs/${org}/projects/site/secrets/X`
    for (const [token, status] of [
      [outsider, 404],
      [viewer, 403],
      [admin, 400]
    ] as const) {
      const nul = await api.call("PUT", secret, {
        token,
        raw: '{"value":"a\\u0000b"}',
        headers: { "content-type": "application/json" }
      })
      expect(nul.status).toBe(status)
    }
    const noSession = await api.call("PUT", secret, { raw: "{", headers: { "content-type": "application/json" } })
    expect(noSession.status).toBe(401)
    expect(noSession.body.code).toBe("unauthorized")
    expect(noSession.headers.get("www-authenticate")).toBe('Bearer realm="hostplane"')
  })
})
