import { Addons, areas as coreAreas, Errors, Kernel } from "@hostplane/core"
import { services } from "@hostplane/core/Area"
import { addonAreaHttp, type AnyAreaHttp, appWith, areas as httpAreas } from "@hostplane/http"
import { Effect, Schema } from "effect"
import { HttpApiEndpoint, OpenApi } from "effect/http-api"
import type { NonEmptyReadonlyArray } from "effect/Array"
import { describe, expect, it } from "vitest"
import { ProjectRef } from "@hostplane/api/projects/ProjectRef"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { auditOf, type Reply, useSuite } from "./support/TestServer.ts"

// The add-on scaffold proven with fixture add-ons: everything but the provider is the real
// `Addons` service, `Mutation`, the audit log, the node revision and `addonAreaHttp`. The fixtures take the names
// `storage` and `database` (ProjectDetail's flags are a closed list), so the real areas' add-ons of those names are
// left out.
const FixtureStatus = Schema.Struct({ granted: Schema.Boolean, prefix: Schema.NullOr(Schema.String) })

const storage = Addons.defineAddon({
  name: "storage",
  status: FixtureStatus,
  audit: { grant: "storage.grant", revoke: "storage.revoke" },
  refusals: [Errors.EmailUnavailable]
})

/** Shaped like the database: another grant answer, no audit actions, no DELETE. */
const database = Addons.defineAddon({
  name: "database",
  status: Schema.Struct({ db: Schema.Boolean }),
  granted: Schema.Struct({ database: Schema.String }),
  audit: undefined,
  revocable: false
})

/** What the fixture providers hold: in-process, since only the scaffold around them is under test. */
const fixtureState = () => ({
  connected: true,
  refuse: false,
  storage: new Map<Kernel.ProjectId, string>(),
  database: new Set<Kernel.ProjectId>()
})

const fixtures = (state: ReturnType<typeof fixtureState>) => {
  const statusOf = (projectId: Kernel.ProjectId) => ({
    granted: state.storage.has(projectId),
    prefix: state.storage.get(projectId) ?? null
  })
  // The real storage area's services stay (the node API records usage through `StorageNode`); only its add-on
  // provider is the fixture.
  const realStorage = coreAreas.find((a) => a.name === "storage")!
  const storageArea = {
    ...realStorage,
    addon: Effect.succeed(
      Addons.addonProvider(storage, {
        granted: (projectId) => Effect.sync(() => state.storage.has(projectId)),
        connected: Effect.sync(() => state.connected),
        status: ({ project }) => Effect.sync(() => statusOf(project.id)),
        grant: ({ project }) =>
          state.refuse
            ? Effect.fail(new Errors.EmailUnavailable({ message: "refused by the fixture" }))
            : Effect.sync(() => {
                const changed = !state.storage.has(project.id)
                if (changed) state.storage.set(project.id, `prj/${project.id}/`)
                return { answer: statusOf(project.id), changed }
              }),
        revoke: ({ project }) => Effect.sync(() => state.storage.delete(project.id))
      })
    )
  }
  // The real database area's services stay (end-user auth and identity deletes need `Databases`); only its add-on
  // provider is the fixture.
  const realDatabase = coreAreas.find((a) => a.name === "database")!
  const databaseArea = {
    ...realDatabase,
    addon: Effect.succeed(
      Addons.addonProvider(database, {
        granted: (projectId) => Effect.sync(() => state.database.has(projectId)),
        connected: Effect.succeed(true),
        status: ({ project }) => Effect.sync(() => ({ db: state.database.has(project.id) })),
        grant: ({ project }) =>
          Effect.sync(() => {
            const changed = !state.database.has(project.id)
            state.database.add(project.id)
            return { answer: { database: "app" }, changed }
          }),
        revoke: () => Effect.succeed(false)
      })
    )
  }
  // An extra endpoint in the storage group, as the database's tokens and operations will be.
  const usage = HttpApiEndpoint.get("usage", "/orgs/:orgSlug/projects/:projectName/storage/usage", {
    params: ProjectRef,
    success: Schema.Struct({ usedBytes: Schema.Number })
  }).annotate(OpenApi.Summary, "Read the fixture's usage")
  const storageHttp = addonAreaHttp(storage, {
    endpoints: [usage],
    handle: (handlers) => handlers.handle("usage", () => Effect.succeed({ usedBytes: 42 })),
    routes: ["GET /v1/orgs/{orgSlug}/projects/{projectName}/storage/usage"]
  })
  const databaseHttp = addonAreaHttp(database, { secret: true })
  const taken = new Set(["storage", "database"])
  // Each fixture in its real area's place: areas are built in order, each on those before it.
  const core = services(
    coreAreas.map((a) => (a.name === "storage" ? storageArea : a.name === "database" ? databaseArea : a)) as never
  )
  const http = [
    ...httpAreas.filter((a: AnyAreaHttp) => !taken.has(a.name)),
    storageHttp,
    databaseHttp
  ] as unknown as NonEmptyReadonlyArray<AnyAreaHttp>
  return { core, http, storageHttp, databaseHttp }
}

describe.each(backends)("add-on scaffold (%s)", (_name, stores) => {
  const state = fixtureState()
  const { core, http, storageHttp, databaseHttp } = fixtures(state)
  const suite = useSuite(stores, {}, undefined, undefined, { served: appWith(http, core) as never })
  const { api, newOrg, withRole } = suite

  const path = (slug: string, project: string, addon = "storage") => `/v1/orgs/${slug}/projects/${project}/${addon}`
  const revision = () =>
    suite.server.run(
      Effect.map(
        Effect.flatMap(Effect.service(Kernel.NodeRevisions), (node) => node.changedAfter(Number.MAX_SAFE_INTEGER, 1)),
        (changes) => changes.revision
      )
    )
  const stampOf = (projectId: Kernel.ProjectId) =>
    suite.server.run(
      Effect.map(
        Effect.flatMap(Effect.service(Kernel.NodeRevisions), (node) => node.changedAfter(0, 100_000)),
        (changes) => changes.projects.find((stamp) => stamp.projectId === projectId)?.revision
      )
    )
  const addonActions = async (slug: string) =>
    (await auditOf(suite.server, slug))
      .filter((event) => event.action.startsWith("storage.") || event.action.startsWith("database."))
      .map((event) => ({ action: event.action, actorId: event.actorId, target: event.target, data: event.data }))
  /** How far the revision moved while `write` ran, and its reply. */
  const moved = async (write: () => Promise<Reply>) => {
    const before = await revision()
    const reply = await write()
    return { status: reply.status, body: reply.body, raised: (await revision()) - before }
  }
  /** Runs `body` with the fixture disconnected or refusing, then restores it. */
  const whileFixture = async (patch: { connected?: boolean; refuse?: boolean }, body: () => Promise<void>) => {
    const saved = { connected: state.connected, refuse: state.refuse }
    Object.assign(state, patch)
    try {
      await body()
    } finally {
      Object.assign(state, saved)
    }
  }
  const fresh = async () => {
    const slug = await newOrg()
    const project = await suite.newProject(slug)
    return { slug, name: project.name, id: project.id }
  }

  it("the area declares its group, handlers and route rows from the definition alone", () => {
    expect(storageHttp.routes).toEqual([
      "GET /v1/orgs/{orgSlug}/projects/{projectName}/storage",
      "POST /v1/orgs/{orgSlug}/projects/{projectName}/storage",
      "DELETE /v1/orgs/{orgSlug}/projects/{projectName}/storage",
      "GET /v1/orgs/{orgSlug}/projects/{projectName}/storage/usage"
    ])
    expect(databaseHttp.routes).toEqual([
      "GET /v1/orgs/{orgSlug}/projects/{projectName}/database",
      "POST /v1/orgs/{orgSlug}/projects/{projectName}/database"
    ])
  })

  it("GET is 200 status; POST grants (200 status), audited once, raising the revision once; ProjectDetail and overview flag it", async () => {
    const { slug, name, id } = await fresh()
    const member = await withRole(slug, "member")
    const viewer = await withRole(slug, "viewer")
    const before = await api.get(path(slug, name), { token: viewer.token })
    expect(before).toMatchObject({ status: 200, body: { granted: false, prefix: null } })
    const granted = await moved(() => api.post(path(slug, name), undefined, { token: member.token }))
    expect(granted).toEqual({ status: 200, body: { granted: true, prefix: `prj/${id}/` }, raised: 1 })
    expect(await stampOf(id)).toBe(await revision())
    expect((await api.get(path(slug, name), { token: viewer.token })).body).toEqual(granted.body)
    const detail = await api.get(`/v1/orgs/${slug}/projects/${name}`, { token: viewer.token })
    expect(detail.body.addons).toEqual({ database: false, storage: true, email: false, auth: false, ai: false })
    const overview = await api.get(`/v1/orgs/${slug}/projects/${name}/overview`, { token: viewer.token })
    expect(overview.body.resources.storage).toEqual({ declared: false, provisioned: true })
    expect(await addonActions(slug)).toEqual([
      { action: "storage.grant", actorId: member.userId, target: id, data: { project: name } }
    ])
  })

  it("a repeated grant answers the same status with no second audit row and no revision", async () => {
    const { slug, name } = await fresh()
    const first = await api.post(path(slug, name), undefined, { token: suite.admin.token })
    const again = await moved(() => api.post(path(slug, name), undefined, { token: suite.admin.token }))
    expect(again).toEqual({ status: 200, body: first.body, raised: 0 })
    expect((await addonActions(slug)).map((event) => event.action)).toEqual(["storage.grant"])
  })

  it("DELETE revokes (204), audited once, raising the revision once; a revoke of nothing is 204 with neither", async () => {
    const { slug, name, id } = await fresh()
    const admin = await withRole(slug, "admin")
    await api.post(path(slug, name), undefined, { token: admin.token })
    const revoked = await moved(() => api.delete(path(slug, name), undefined, { token: admin.token }))
    expect(revoked).toMatchObject({ status: 204, raised: 1 })
    const detail = await api.get(`/v1/orgs/${slug}/projects/${name}`, { token: admin.token })
    expect(detail.body.addons.storage).toBe(false)
    expect(await moved(() => api.delete(path(slug, name), undefined, { token: admin.token }))).toMatchObject({
      status: 204,
      raised: 0
    })
    expect(await addonActions(slug)).toEqual([
      { action: "storage.grant", actorId: admin.userId, target: id, data: { project: name } },
      { action: "storage.revoke", actorId: admin.userId, target: id, data: { project: name } }
    ])
  })

  describe("roles: status viewer, grant member, revoke admin", () => {
    const setup = async (slug: string) => (await suite.newProject(slug)).name
    itChecksRoles(suite, {
      name: "GET storage",
      min: "viewer",
      setup,
      request: (slug, project) => ({ method: "GET", path: path(slug, project) }),
      ok: 200
    })
    itChecksRoles(suite, {
      name: "POST storage",
      min: "member",
      setup,
      request: (slug, project) => ({ method: "POST", path: path(slug, project) }),
      ok: 200
    })
    itChecksRoles(suite, {
      name: "DELETE storage",
      min: "admin",
      setup,
      request: (slug, project) => ({ method: "DELETE", path: path(slug, project) }),
      ok: 204
    })
  })

  it("a refused grant or revoke by role, or of an unknown project, writes no audit row and raises nothing", async () => {
    const { slug, name } = await fresh()
    const viewer = await withRole(slug, "viewer")
    const member = await withRole(slug, "member")
    expect(await moved(() => api.post(path(slug, name), undefined, { token: viewer.token }))).toMatchObject({
      status: 403,
      body: { code: "forbidden" },
      raised: 0
    })
    await api.post(path(slug, name), undefined, { token: member.token })
    expect(await moved(() => api.delete(path(slug, name), undefined, { token: member.token }))).toMatchObject({
      status: 403,
      raised: 0
    })
    expect(await moved(() => api.post(path(slug, "nope"), undefined, { token: member.token }))).toMatchObject({
      status: 404,
      body: { code: "not_found" },
      raised: 0
    })
    expect((await addonActions(slug)).map((event) => event.action)).toEqual(["storage.grant"])
  })

  it("503 no_core when the backend is not connected, after authorization (outsider 404, lower role 403)", async () => {
    const { slug, name } = await fresh()
    const viewer = await withRole(slug, "viewer")
    await whileFixture({ connected: false }, async () => {
      const token = suite.admin.token
      for (const reply of [
        await moved(() => api.get(path(slug, name), { token })),
        await moved(() => api.post(path(slug, name), undefined, { token })),
        await moved(() => api.delete(path(slug, name), undefined, { token }))
      ]) {
        expect(reply).toMatchObject({ status: 503, body: { code: "no_core" }, raised: 0 })
      }
      expect((await api.get(path(slug, name), { token: suite.outsider.token })).status).toBe(404)
      expect((await api.post(path(slug, name), undefined, { token: viewer.token })).status).toBe(403)
    })
    expect(await addonActions(slug)).toEqual([])
  })

  it("once the project's delete is accepted: grant and revoke 409 op_in_flight (after no_core), status still 200", async () => {
    const { slug, name } = await fresh()
    const token = suite.admin.token
    expect((await api.delete(`/v1/orgs/${slug}/projects/${name}`, { confirm: name }, { token })).status).toBe(202)
    expect(await moved(() => api.post(path(slug, name), undefined, { token }))).toMatchObject({
      status: 409,
      body: { code: "op_in_flight" },
      raised: 0
    })
    expect((await api.delete(path(slug, name), undefined, { token })).body.code).toBe("op_in_flight")
    expect((await api.get(path(slug, name), { token })).status).toBe(200)
    await whileFixture({ connected: false }, async () => {
      expect((await api.post(path(slug, name), undefined, { token })).body.code).toBe("no_core")
    })
    expect(await addonActions(slug)).toEqual([])
  })

  it("the provider's own refusal answers its code, with no audit row and no revision", async () => {
    const { slug, name } = await fresh()
    await whileFixture({ refuse: true }, async () => {
      expect(await moved(() => api.post(path(slug, name), undefined, { token: suite.admin.token }))).toMatchObject({
        status: 409,
        body: { code: "email_unavailable" },
        raised: 0
      })
    })
    expect(await addonActions(slug)).toEqual([])
  })

  it("an add-on without audit actions or DELETE (the database's shape): a grant raises the revision, no audit row; a secret answer is no-store", async () => {
    const { slug, name, id } = await fresh()
    const token = suite.admin.token
    expect((await api.get(path(slug, name, "database"), { token })).body).toEqual({ db: false })
    expect(await moved(() => api.post(path(slug, name, "database"), undefined, { token }))).toEqual({
      status: 200,
      body: { database: "app" },
      raised: 1
    })
    const stamp = await stampOf(id)
    const again = await api.post(path(slug, name, "database"), undefined, { token })
    expect({
      status: again.status,
      cacheControl: again.headers.get("cache-control"),
      stamp: await stampOf(id)
    }).toEqual({
      status: 200,
      cacheControl: "no-store",
      stamp
    })
    expect((await api.get(`/v1/orgs/${slug}/projects/${name}`, { token })).body.addons.database).toBe(true)
    expect(await addonActions(slug)).toEqual([])
    expect((await auditOf(suite.server, slug)).map((event) => event.action)).toEqual(["org.create", "project.create"])
    expect((await api.delete(path(slug, name, "database"), undefined, { token })).status).toBe(405)
  })

  it("an extra endpoint joins the add-on's group behind the same session", async () => {
    const { slug, name } = await fresh()
    expect((await api.get(`${path(slug, name)}/usage`, { token: suite.admin.token })).body).toEqual({ usedBytes: 42 })
    expect((await api.get(`${path(slug, name)}/usage`)).status).toBe(401)
    const doc = await api.get("/v1/openapi.json")
    const operations = doc.body.paths["/v1/orgs/{orgSlug}/projects/{projectName}/storage"]
    expect(Object.keys(operations).sort()).toEqual(["delete", "get", "post"])
    expect(operations.post.summary).toBe("Grant the storage add-on")
    expect(operations.post.responses["200"].headers?.["cache-control"]).toBeUndefined()
    expect(Object.keys(operations.post.responses)).toEqual(expect.arrayContaining(["200", "403", "404", "409", "503"]))
    const databaseOperations = doc.body.paths["/v1/orgs/{orgSlug}/projects/{projectName}/database"]
    expect(Object.keys(databaseOperations).sort()).toEqual(["get", "post"])
    expect(databaseOperations.post.responses["200"].headers["cache-control"].schema.enum).toEqual(["no-store"])
  })
})
