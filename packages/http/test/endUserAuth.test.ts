import { EndUser, Hostnames, type Kernel, Secrets } from "@hostplane/core"
import { BackupStoreMemory, DatabaseNodeMemory } from "@hostplane/testkit"
import { Effect, Layer, Option } from "effect"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { auditOf, logCapture, unique, useSuite } from "./support/TestServer.ts"

const nodeToken = "node-token-auth-5d2e"
const defaults = { sessionDays: 30, allowSignups: true }

describe.each(backends)("spec 4.9 end-user auth add-on (%s)", (_name, stores) => {
  const { lines: logs, layer: captureLogs } = logCapture()
  const suite = useSuite(stores, { node: { token: nodeToken } }, captureLogs, undefined, {
    providers: [Layer.mergeAll(DatabaseNodeMemory.layer, BackupStoreMemory.layer)]
  })
  const { api, newOrg, newProject } = suite
  const admin = () => ({ token: suite.admin.token })
  const authOf = (slug: string, project: string) => `/v1/orgs/${slug}/projects/${project}/auth`
  const providerOf = (slug: string, project: string, provider: string) =>
    `${authOf(slug, project)}/providers/${provider}`

  /** A project with the database add-on, ready for an auth grant. */
  const withDatabase = async (slug: string) => {
    const project = await newProject(slug)
    expect((await api.post(`/v1/orgs/${slug}/projects/${project.name}/database`, undefined, admin())).status).toBe(200)
    return project
  }
  const granted = async (slug: string) => {
    const project = await withDatabase(slug)
    expect((await api.post(authOf(slug, project.name), undefined, admin())).status).toBe(200)
    return project
  }
  const authAudit = async (slug: string) =>
    (await auditOf(suite.server, slug))
      .filter((event) => event.action.startsWith("auth."))
      .map((event) => [event.action, event.target, event.data])
  const nodeEntry = async (projectId: string) => {
    const reply = await api.get("/v1/node/state?after=0", { token: nodeToken })
    return (reply.body.projects as Array<any>).find((p) => p.projectId === projectId)
  }
  const revision = async () => (await api.get("/v1/node/state?after=0", { token: nodeToken })).body.revision as number

  itChecksRoles(suite, {
    name: "GET auth",
    min: "viewer",
    setup: (slug) => newProject(slug),
    request: (slug, project) => ({ method: "GET", path: authOf(slug, project.name) }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "POST auth",
    min: "member",
    setup: withDatabase,
    request: (slug, project) => ({ method: "POST", path: authOf(slug, project.name) }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "PATCH auth",
    min: "member",
    setup: granted,
    request: (slug, project) => ({ method: "PATCH", path: authOf(slug, project.name), body: { sessionDays: 7 } }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "DELETE auth",
    min: "admin",
    setup: granted,
    request: (slug, project) => ({ method: "DELETE", path: authOf(slug, project.name) }),
    ok: 204
  })
  itChecksRoles(suite, {
    name: "PUT auth/providers/{provider}",
    min: "admin",
    setup: granted,
    request: (slug, project) => ({
      method: "PUT",
      path: providerOf(slug, project.name, "github"),
      body: { clientId: "gh-client", clientSecret: "gh-secret" }
    }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "DELETE auth/providers/{provider}",
    min: "admin",
    setup: granted,
    request: (slug, project) => ({ method: "DELETE", path: providerOf(slug, project.name, "github") }),
    ok: 204
  })

  it("status before a grant: not granted, not configured, the project's active hosts, default settings", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const reply = await api.get(authOf(slug, project.name), admin())
    expect(reply).toMatchObject({ status: 200 })
    expect(reply.body).toEqual({
      granted: false,
      configured: false,
      providers: [],
      hosts: [project.hostname],
      settings: defaults
    })
  })

  it("hosts are the project's active hostnames: a custom name joins once verified, never while pending_dns", async () => {
    const slug = await newOrg()
    const project = await granted(slug)
    const custom = `login.${unique("shop")}.example`
    const added = await api.post(`/v1/orgs/${slug}/projects/${project.name}/hostnames`, { name: custom }, admin())
    expect(added.body).toMatchObject({ status: "pending_dns" })
    expect((await api.get(authOf(slug, project.name), admin())).body.hosts).toEqual([project.hostname])
    // What a passing verification does (spec 4.4; the DNS checks themselves are tested with the hostnames).
    await suite.server.run(
      Effect.gen(function* () {
        const store = yield* Hostnames.HostnameStore
        const row = Option.getOrThrow(yield* store.find(custom))
        yield* store.markActive(custom, row.verifyToken ?? "", new Date().toISOString())
      })
    )
    expect((await api.get(authOf(slug, project.name), admin())).body.hosts).toEqual([project.hostname, custom])
    const put = await api.put(providerOf(slug, project.name, "github"), { clientId: "a", clientSecret: "b" }, admin())
    expect(put.body.hosts).toEqual([project.hostname, custom])
  })

  it("a project named under an org it does not belong to is 404 not_found on every auth route, whatever the role", async () => {
    const slug = await newOrg()
    const other = await newOrg()
    // Granted and configured in its own org: a route that found it through the wrong org would answer or change it.
    const foreign = await granted(other)
    await api.put(providerOf(other, foreign.name, "github"), { clientId: "gh", clientSecret: "s" }, admin())
    const viewer = await suite.withRole(slug, "viewer")
    const routes = (name: string) =>
      [
        ["GET", authOf(slug, name), undefined],
        ["POST", authOf(slug, name), undefined],
        ["PATCH", authOf(slug, name), { sessionDays: 7 }],
        ["DELETE", authOf(slug, name), undefined],
        ["PUT", providerOf(slug, name, "google"), { clientId: "g", clientSecret: "s" }],
        ["DELETE", providerOf(slug, name, "github"), undefined]
      ] as const
    for (const [token, name] of [
      [suite.admin.token, foreign.name],
      [viewer.token, foreign.name],
      [suite.admin.token, "no-such-project"]
    ] as const) {
      for (const [method, route, body] of routes(name)) {
        const reply = await api.call(method, route, { token, body })
        expect({ method, route, status: reply.status, code: reply.body.code }).toEqual({
          method,
          route,
          status: 404,
          code: "not_found"
        })
      }
    }
    const status = await api.get(authOf(other, foreign.name), admin())
    expect(status.body).toMatchObject({
      granted: true,
      providers: [{ provider: "github", clientId: "gh" }],
      settings: defaults
    })
    expect(await authAudit(slug)).toEqual([])
  })

  it("a grant without the database add-on is 409 database_required and changes nothing", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const reply = await api.post(authOf(slug, project.name), undefined, admin())
    expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 409, code: "database_required" })
    expect((await api.get(authOf(slug, project.name), admin())).body.granted).toBe(false)
    expect(await authAudit(slug)).toEqual([])
  })

  it("grant: defaults, idempotent (one auth.grant), ProjectDetail addons.auth, the node's auth binding", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    const before = await revision()
    const first = await api.post(authOf(slug, project.name), undefined, admin())
    expect(first.status).toBe(200)
    expect(first.body).toEqual({
      granted: true,
      configured: false,
      providers: [],
      hosts: [project.hostname],
      settings: defaults
    })
    const afterGrant = await revision()
    expect(afterGrant).toBeGreaterThan(before)
    const again = await api.post(authOf(slug, project.name), undefined, admin())
    expect(again.body).toEqual(first.body)
    expect(await revision()).toBe(afterGrant)
    expect(await authAudit(slug)).toEqual([["auth.grant", project.id, { project: project.name }]])
    const detail = await api.get(`/v1/orgs/${slug}/projects/${project.name}`, admin())
    expect(detail.body.addons.auth).toBe(true)
    expect((await nodeEntry(project.id)).bindings.auth).toEqual({ settings: defaults, providers: [] })
  })

  it("PATCH is partial; sessionDays outside 1..365 is 400; every change is audited auth.settings and raises the revision", async () => {
    const slug = await newOrg()
    const project = await granted(slug)
    const path = authOf(slug, project.name)
    const before = await revision()
    const days = await api.patch(path, { sessionDays: 7 }, admin())
    expect(days.status).toBe(200)
    expect(days.body.settings).toEqual({ sessionDays: 7, allowSignups: true })
    expect(await revision()).toBeGreaterThan(before)
    const signups = await api.patch(path, { allowSignups: false }, admin())
    expect(signups.body.settings).toEqual({ sessionDays: 7, allowSignups: false })
    const nothing = await api.patch(path, {}, admin())
    expect(nothing.body.settings).toEqual({ sessionDays: 7, allowSignups: false })
    for (const sessionDays of [0, 366, 1.5, "30"]) {
      const bad = await api.patch(path, { sessionDays }, admin())
      expect({ sessionDays, status: bad.status, code: bad.body.code }).toEqual({
        sessionDays,
        status: 400,
        code: "bad_request"
      })
    }
    expect((await api.patch(path, { sessionDays: 1 }, admin())).body.settings.sessionDays).toBe(1)
    expect((await api.patch(path, { sessionDays: 365 }, admin())).body.settings.sessionDays).toBe(365)
    expect(await authAudit(slug)).toEqual([
      ["auth.grant", project.id, { project: project.name }],
      ["auth.settings", project.id, { project: project.name, sessionDays: 7 }],
      ["auth.settings", project.id, { project: project.name, allowSignups: false }],
      ["auth.settings", project.id, { project: project.name, sessionDays: 1 }],
      ["auth.settings", project.id, { project: project.name, sessionDays: 365 }]
    ])
    expect((await nodeEntry(project.id)).bindings.auth.settings).toEqual({ sessionDays: 365, allowSignups: false })
  })

  it("PATCH while auth is off is 404 not_granted; on a missing project 404 not_found", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    const off = await api.patch(authOf(slug, project.name), { sessionDays: 7 }, admin())
    expect({ status: off.status, code: off.body.code }).toEqual({ status: 404, code: "not_granted" })
    const missing = await api.patch(authOf(slug, "no-such-project"), { sessionDays: 7 }, admin())
    expect({ status: missing.status, code: missing.body.code }).toEqual({ status: 404, code: "not_found" })
  })

  it("PUT provider: sealed secret never returned, logged or audited; rotation is the same call; configured and the binding follow", async () => {
    const slug = await newOrg()
    const project = await granted(slug)
    const secret = "discord-secret-8c1f0e"
    const put = await api.put(
      providerOf(slug, project.name, "discord"),
      { clientId: "dc-1", clientSecret: secret },
      admin()
    )
    expect(put.status).toBe(200)
    expect(put.body).toMatchObject({
      granted: true,
      configured: true,
      providers: [{ provider: "discord", clientId: "dc-1" }]
    })
    const rotated = "discord-secret-rotated-2b7"
    await api.put(
      providerOf(slug, project.name, "github"),
      { clientId: "gh-1", clientSecret: "gh-secret-0a9" },
      admin()
    )
    const again = await api.put(
      providerOf(slug, project.name, "discord"),
      { clientId: "dc-2", clientSecret: rotated },
      admin()
    )
    expect(again.body.providers).toEqual([
      { provider: "github", clientId: "gh-1" },
      { provider: "discord", clientId: "dc-2" }
    ])
    const status = await api.get(authOf(slug, project.name), admin())
    expect(status.body.providers).toEqual(again.body.providers)
    const opened = await suite.server.run(
      Effect.gen(function* () {
        const rows = yield* (yield* EndUser.AuthStore).providers(project.id)
        const row = rows.find((r) => r.provider === "discord")!
        const sealer = yield* Secrets.Sealer
        const wrongContext = yield* Effect.exit(
          sealer.open(row.sealedSecret, EndUser.clientSecretContext(project.id, "github"))
        )
        return {
          stored: JSON.stringify(row),
          value: yield* Effect.orDie(
            sealer.open(row.sealedSecret, EndUser.clientSecretContext(project.id as Kernel.ProjectId, "discord"))
          ),
          wrongContext: wrongContext._tag
        }
      })
    )
    expect(opened.value).toBe(rotated)
    expect(opened.wrongContext).toBe("Failure")
    expect(opened.stored).not.toContain(rotated)
    const audit = await authAudit(slug)
    expect(audit.slice(1)).toEqual([
      ["auth.provider.set", project.id, { project: project.name, provider: "discord", clientId: "dc-1" }],
      ["auth.provider.set", project.id, { project: project.name, provider: "github", clientId: "gh-1" }],
      ["auth.provider.set", project.id, { project: project.name, provider: "discord", clientId: "dc-2" }]
    ])
    const node = await nodeEntry(project.id)
    expect(node.bindings.auth).toEqual({
      settings: defaults,
      providers: [
        { provider: "github", clientId: "gh-1" },
        { provider: "discord", clientId: "dc-2" }
      ]
    })
    const everything = JSON.stringify({ put: put.body, again: again.body, status: status.body, audit, node, logs })
    for (const value of [secret, rotated, "gh-secret-0a9"]) expect(everything).not.toContain(value)
  })

  it("PUT provider on a project being deleted: 400 invalid_provider before 409 op_in_flight (decisions.md part 12)", async () => {
    const slug = await newOrg()
    const project = await granted(slug)
    const remove = await api.delete(`/v1/orgs/${slug}/projects/${project.name}`, { confirm: project.name }, admin())
    expect(remove.status).toBe(202)
    const answers = [
      await api.put(providerOf(slug, project.name, "facebook"), { clientId: "a", clientSecret: "b" }, admin()),
      await api.put(providerOf(slug, project.name, "github"), { clientId: "", clientSecret: "b" }, admin()),
      await api.put(providerOf(slug, project.name, "github"), { clientId: "a", clientSecret: "b" }, admin())
    ]
    expect(answers.map((reply) => [reply.status, reply.body.code])).toEqual([
      [400, "invalid_provider"],
      [400, "invalid_provider"],
      [409, "op_in_flight"]
    ])
    expect((await authAudit(slug)).map(([action]) => action)).toEqual(["auth.grant"])
  })

  it("PUT provider: a name outside the three, or an empty or missing clientId or clientSecret, is 400 invalid_provider", async () => {
    const slug = await newOrg()
    const project = await granted(slug)
    const cases: ReadonlyArray<readonly [string, unknown]> = [
      ["facebook", { clientId: "a", clientSecret: "b" }],
      ["GitHub", { clientId: "a", clientSecret: "b" }],
      ["github", { clientId: "", clientSecret: "b" }],
      ["github", { clientId: "a", clientSecret: "" }],
      ["github", { clientId: "  ", clientSecret: "b" }],
      ["google", { clientSecret: "b" }],
      ["google", { clientId: "a" }],
      ["google", {}]
    ]
    for (const [provider, body] of cases) {
      const reply = await api.put(providerOf(slug, project.name, provider), body, admin())
      expect({ provider, body, status: reply.status, code: reply.body.code }).toEqual({
        provider,
        body,
        status: 400,
        code: "invalid_provider"
      })
    }
    expect((await api.get(authOf(slug, project.name), admin())).body.configured).toBe(false)
    expect((await authAudit(slug)).map(([action]) => action)).toEqual(["auth.grant"])
  })

  it("PUT provider while auth is off is 404 not_granted", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    const reply = await api.put(providerOf(slug, project.name, "google"), { clientId: "a", clientSecret: "b" }, admin())
    expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 404, code: "not_granted" })
  })

  it("DELETE provider: 204 for a registered one (auth.provider.delete), an unregistered one and an unknown name", async () => {
    const slug = await newOrg()
    const project = await granted(slug)
    await api.put(providerOf(slug, project.name, "google"), { clientId: "g-1", clientSecret: "g-secret" }, admin())
    for (const name of ["google", "google", "github", "myspace"]) {
      expect((await api.delete(providerOf(slug, project.name, name), undefined, admin())).status).toBe(204)
    }
    const status = await api.get(authOf(slug, project.name), admin())
    expect(status.body).toMatchObject({ configured: false, providers: [] })
    expect((await authAudit(slug)).slice(2)).toEqual([
      ["auth.provider.delete", project.id, { project: project.name, provider: "google" }]
    ])
  })

  it("revoke: 204 even when off; settings and providers go (the next grant starts at defaults); auth.revoke; binding null", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    expect((await api.delete(authOf(slug, project.name), undefined, admin())).status).toBe(204)
    await api.post(authOf(slug, project.name), undefined, admin())
    await api.patch(authOf(slug, project.name), { sessionDays: 3 }, admin())
    await api.put(providerOf(slug, project.name, "github"), { clientId: "gh", clientSecret: "s" }, admin())
    expect((await api.delete(authOf(slug, project.name), undefined, admin())).status).toBe(204)
    expect((await api.delete(authOf(slug, project.name), undefined, admin())).status).toBe(204)
    const status = await api.get(authOf(slug, project.name), admin())
    expect(status.body).toEqual({
      granted: false,
      configured: false,
      providers: [],
      hosts: [project.hostname],
      settings: defaults
    })
    expect((await nodeEntry(project.id)).bindings.auth).toBeNull()
    const detail = await api.get(`/v1/orgs/${slug}/projects/${project.name}`, admin())
    expect(detail.body.addons.auth).toBe(false)
    expect((await api.post(authOf(slug, project.name), undefined, admin())).body.settings).toEqual(defaults)
    expect((await authAudit(slug)).map(([action]) => action)).toEqual([
      "auth.grant",
      "auth.settings",
      "auth.provider.set",
      "auth.revoke",
      "auth.grant"
    ])
  })
})
