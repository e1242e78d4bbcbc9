import { ObjectStoreDisk } from "@hostplane/adapters-providers"
import { Jobs, Orgs, Projects, Storage } from "@hostplane/core"
import { ObjectStoreMemory } from "@hostplane/testkit"
import { Effect, Layer, Option, Stream } from "effect"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { auditOf, useSuite } from "./support/TestServer.ts"

const GiB = 1024 ** 3
const nodeToken = "node-token-storage-5e1"
const asNode = { token: nodeToken }

/** PostgreSQL with the local folder, memory with the memory object store: both adapters behind the same routes. */
const objectStores: Record<string, () => Layer.Layer<Storage.ObjectStore, unknown>> = {
  postgres: () => ObjectStoreDisk.layerTemp,
  memory: () => ObjectStoreMemory.layer
}

describe.each(backends)("spec 4.7 object storage (%s)", (backend, stores) => {
  const suite = useSuite(stores, { node: { token: nodeToken } }, undefined, undefined, {
    providers: [objectStores[backend]!()]
  })
  const { api, newOrg, newProject } = suite
  const path = (slug: string, project: string) => `/v1/orgs/${slug}/projects/${project}/storage`
  const asAdmin = () => ({ token: suite.admin.token })

  const objects = <A>(use: (store: Storage.ObjectStore["Service"]) => Effect.Effect<A, Storage.ObjectStoreError>) =>
    suite.server.run(
      // The store is an optional port (not in `Served`): the server got it from the suite's options.
      Effect.flatMap(Effect.service(Storage.ObjectStore) as Effect.Effect<Storage.ObjectStore["Service"]>, use).pipe(
        Effect.orDie
      )
    )
  const putObject = (key: string, value: string) =>
    objects((store) => store.put(key, Stream.make(new TextEncoder().encode(value))))
  const keysUnder = (prefix: string) =>
    objects((store) =>
      Effect.map(Stream.runCollect(store.list(prefix)), (items) => Array.from(items, (item) => item.key).sort())
    )
  const nodeState = async (after: number) => {
    const reply = await api.get(`/v1/node/state?after=${after}`, asNode)
    expect(reply.status).toBe(200)
    return reply.body as { revision: number; projects: Array<Record<string, any>> }
  }
  const report = (items: ReadonlyArray<unknown>) => api.post("/v1/node/usage", { items }, asNode)

  itChecksRoles(suite, {
    name: "GET storage",
    min: "viewer",
    setup: (slug) => newProject(slug),
    request: (slug, project) => ({ method: "GET", path: path(slug, project.name) }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "POST storage",
    min: "member",
    setup: (slug) => newProject(slug),
    request: (slug, project) => ({ method: "POST", path: path(slug, project.name) }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "DELETE storage",
    min: "admin",
    setup: (slug) => newProject(slug),
    request: (slug, project) => ({ method: "DELETE", path: path(slug, project.name) }),
    ok: 204
  })

  it("a project named under an org it does not belong to is 404 not_found on all three routes, whatever the role", async () => {
    const slug = await newOrg()
    const other = await newOrg()
    const foreign = await newProject(other)
    // Granted in its own org: a route that found it through the wrong org would answer its status.
    expect((await api.post(path(other, foreign.name), undefined, asAdmin())).status).toBe(200)
    const viewer = await suite.withRole(slug, "viewer")
    for (const [token, name] of [
      [suite.admin.token, foreign.name],
      [viewer.token, foreign.name],
      [suite.admin.token, "no-such-project"]
    ] as const) {
      for (const method of ["GET", "POST", "DELETE"]) {
        const reply = await api.call(method, path(slug, name), { token })
        expect({ method, name, status: reply.status, code: reply.body.code }).toEqual({
          method,
          name,
          status: 404,
          code: "not_found"
        })
      }
    }
    // Nothing reached the project in its own org.
    expect((await api.get(path(other, foreign.name), asAdmin())).body.enabled).toBe(true)
    expect((await auditOf(suite.server, slug)).filter((event) => event.action.startsWith("storage."))).toEqual([])
  })

  it("status before a grant: not enabled, the prefix it will have, the free plan's 1 GiB quota, 0 used", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const reply = await api.get(path(slug, project.name), asAdmin())
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({ enabled: false, prefix: `${project.id}/`, quotaBytes: GiB, usedBytes: 0 })
  })

  it("grant is idempotent and the prefix never changes (audit storage.grant once); revoke keeps the objects, 204 even when off (storage.revoke once)", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const granted = await api.post(path(slug, project.name), undefined, asAdmin())
    expect(granted.status).toBe(200)
    const status = { enabled: true, prefix: `${project.id}/`, quotaBytes: GiB, usedBytes: 0 }
    expect(granted.body).toEqual(status)
    // The prefix comes from the project id, never from its name.
    expect(granted.body.prefix).not.toContain(project.name)
    expect((await api.post(path(slug, project.name), undefined, asAdmin())).body).toEqual(status)
    expect((await api.get(path(slug, project.name), asAdmin())).body).toEqual(status)
    const detail = await api.get(`/v1/orgs/${slug}/projects/${project.name}`, asAdmin())
    expect(detail.body.addons.storage).toBe(true)

    await putObject(`${project.id}/photos/cat.jpg`, "meow")
    expect((await api.delete(path(slug, project.name), undefined, asAdmin())).status).toBe(204)
    expect((await api.delete(path(slug, project.name), undefined, asAdmin())).status).toBe(204)
    expect((await api.get(path(slug, project.name), asAdmin())).body).toEqual({ ...status, enabled: false })
    expect((await api.get(`/v1/orgs/${slug}/projects/${project.name}`, asAdmin())).body.addons.storage).toBe(false)
    expect(await keysUnder(`${project.id}/`)).toEqual([`${project.id}/photos/cat.jpg`])

    // A grant after a revoke finds the same prefix and the objects under it.
    expect((await api.post(path(slug, project.name), undefined, asAdmin())).body).toEqual(status)
    const audit = (await auditOf(suite.server, slug)).filter((event) => event.action.startsWith("storage."))
    expect(audit.map((event) => [event.action, event.target, event.data])).toEqual([
      ["storage.grant", project.id, { project: project.name }],
      ["storage.revoke", project.id, { project: project.name }],
      ["storage.grant", project.id, { project: project.name }]
    ])
  })

  it("revoke of a project never granted is 204 with no audit row", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    expect((await api.delete(path(slug, project.name), undefined, asAdmin())).status).toBe(204)
    expect((await auditOf(suite.server, slug)).filter((event) => event.action.startsWith("storage."))).toEqual([])
  })

  it("the quota is the org plan's, read live: 100 GiB on pro", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    await api.post(path(slug, project.name), undefined, asAdmin())
    await suite.server.run(
      Effect.gen(function* () {
        const orgs = yield* Orgs.OrgStore
        const org = yield* orgs.findBySlug(slug)
        yield* orgs.setPlan(Option.getOrThrow(org).id, "pro")
      })
    )
    expect((await api.get(path(slug, project.name), asAdmin())).body.quotaBytes).toBe(100 * GiB)
  })

  it("a grant and a revoke raise the node revision; the binding is { prefix, quotaBytes } while granted, else null", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const start = (await nodeState(0)).revision
    await api.post(path(slug, project.name), undefined, asAdmin())
    const afterGrant = await nodeState(start)
    expect(afterGrant.revision).toBeGreaterThan(start)
    const entry = afterGrant.projects.find((p) => p.projectId === project.id)
    expect(entry?.bindings.storage).toEqual({ prefix: `${project.id}/`, quotaBytes: GiB })
    // A repeated grant changes nothing a node applies.
    await api.post(path(slug, project.name), undefined, asAdmin())
    expect((await nodeState(afterGrant.revision)).projects.map((p) => p.projectId)).not.toContain(project.id)
    await api.delete(path(slug, project.name), undefined, asAdmin())
    const afterRevoke = await nodeState(afterGrant.revision)
    expect(afterRevoke.projects.find((p) => p.projectId === project.id)?.bindings.storage).toBeNull()
  })

  it("POST /v1/node/usage sets usedBytes (the last line of a project wins); unknown, never granted and deleted ids are ignored and listed; a revoked project is still recorded", async () => {
    const slug = await newOrg()
    const granted = await newProject(slug)
    const revoked = await newProject(slug)
    const never = await newProject(slug)
    await api.post(path(slug, granted.name), undefined, asAdmin())
    await api.post(path(slug, revoked.name), undefined, asAdmin())
    await api.delete(path(slug, revoked.name), undefined, asAdmin())
    const big = 5 * 2 ** 40 + 17
    const reply = await report([
      { projectId: granted.id, storageBytes: 1 },
      { projectId: revoked.id, storageBytes: 2048 },
      { projectId: never.id, storageBytes: 7 },
      { projectId: "prj_doesnotexist", storageBytes: 9 },
      { projectId: granted.id, storageBytes: big }
    ])
    expect(reply.status).toBe(200)
    expect(reply.body.recorded).toBe(2)
    expect([...reply.body.ignored].sort()).toEqual([never.id, "prj_doesnotexist"].sort())
    expect((await api.get(path(slug, granted.name), asAdmin())).body).toMatchObject({ enabled: true, usedBytes: big })
    expect((await api.get(path(slug, revoked.name), asAdmin())).body).toMatchObject({
      enabled: false,
      usedBytes: 2048
    })
    expect((await api.get(path(slug, never.name), asAdmin())).body.usedBytes).toBe(0)
    // A later report replaces the figure, down to zero.
    await report([{ projectId: granted.id, storageBytes: 0 }])
    expect((await api.get(path(slug, granted.name), asAdmin())).body.usedBytes).toBe(0)
    const empty = await report([])
    expect(empty.body).toEqual({ recorded: 0, ignored: [] })
  })

  it("a usage report with a bad body is 400 bad_request and records nothing", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    await api.post(path(slug, project.name), undefined, asAdmin())
    const bodies: ReadonlyArray<unknown> = [
      {},
      { items: "x" },
      { items: [{ projectId: project.id }] },
      { items: [{ projectId: project.id, storageBytes: -1 }] },
      { items: [{ projectId: project.id, storageBytes: 1.5 }] },
      { items: [{ projectId: project.id, storageBytes: "10" }] },
      { items: [{ storageBytes: 10 }] },
      { items: Array.from({ length: 10_001 }, () => ({ projectId: project.id, storageBytes: 10 })) }
    ]
    for (const body of bodies) {
      const reply = await api.post("/v1/node/usage", body, asNode)
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 400, code: "bad_request" })
    }
    expect((await api.get(path(slug, project.name), asAdmin())).body.usedBytes).toBe(0)
  })

  it("a usage report needs the node token: missing, wrong or a user session is 401", async () => {
    for (const options of [{}, { token: "wrong" }, { token: suite.admin.token }]) {
      const reply = await api.post("/v1/node/usage", { items: [] }, options)
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 401, code: "unauthorized" })
    }
  })

  it("a project delete removes the objects under its prefix (the data phase) and no other project's", async () => {
    const slug = await newOrg()
    const doomed = await newProject(slug)
    const kept = await newProject(slug)
    await api.post(path(slug, doomed.name), undefined, asAdmin())
    await api.post(path(slug, kept.name), undefined, asAdmin())
    await putObject(`${doomed.id}/a.txt`, "a")
    await putObject(`${doomed.id}/deep/er/b.txt`, "b")
    await putObject(`${kept.id}/a.txt`, "kept")
    // A project whose id starts with the other's must keep its objects too: the prefix ends in `/`.
    await putObject(`${doomed.id}x/c.txt`, "not a prefix match")
    await api.delete(path(slug, doomed.name), undefined, asAdmin())
    const started = await api.delete(`/v1/orgs/${slug}/projects/${doomed.name}`, { confirm: doomed.name }, asAdmin())
    expect(started.status).toBe(202)
    // A grant while the project is being deleted is refused.
    const late = await api.post(path(slug, doomed.name), undefined, asAdmin())
    expect({ status: late.status, code: late.body.code }).toEqual({ status: 409, code: "op_in_flight" })
    await suite.server.run(Jobs.JobRunner.runOnce([Projects.projectDeleteHandler]))
    const finished = await api.get(`/v1/orgs/${slug}/operations/${started.body.operationId}`, asAdmin())
    expect(finished.body).toMatchObject({ terminalCode: "done" })
    expect(await keysUnder(`${doomed.id}/`)).toEqual([])
    expect(await keysUnder(`${kept.id}/`)).toEqual([`${kept.id}/a.txt`])
    expect(await keysUnder(`${doomed.id}x/`)).toEqual([`${doomed.id}x/c.txt`])
    const usage = await report([{ projectId: doomed.id, storageBytes: 1 }])
    expect(usage.body).toEqual({ recorded: 0, ignored: [doomed.id] })
    const gone = (await nodeState(0)).projects.find((p) => p.projectId === doomed.id)
    expect(gone).toMatchObject({ removed: true, bindings: { storage: null } })
  })
})

describe.each(backends)("spec 4.7 object storage without an object store (%s)", (_name, stores) => {
  const suite = useSuite(stores)
  const { api, newOrg, newProject, withRole } = suite
  const path = (slug: string, project: string) => `/v1/orgs/${slug}/projects/${project}/storage`

  it("every storage route answers 503 no_core once the caller is authorized; outsiders 404 and low roles 403 first", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const viewer = await withRole(slug, "viewer")
    for (const method of ["GET", "POST", "DELETE"]) {
      const reply = await api.call(method, path(slug, project.name), { token: suite.admin.token })
      expect({ method, status: reply.status, code: reply.body.code }).toEqual({ method, status: 503, code: "no_core" })
      const outsider = await api.call(method, path(slug, project.name), { token: suite.outsider.token })
      expect({ method, status: outsider.status }).toEqual({ method, status: 404 })
    }
    expect((await api.post(path(slug, project.name), undefined, { token: viewer.token })).status).toBe(403)
    expect((await api.delete(path(slug, project.name), undefined, { token: viewer.token })).status).toBe(403)
    expect(
      (await api.get(`/v1/orgs/${slug}/projects/${project.name}`, { token: suite.admin.token })).body.addons.storage
    ).toBe(false)
  })
})

describe("POST /v1/node/usage without SERVICE_NODE_TOKEN", () => {
  const suite = useSuite(backends[1]![1])
  it("answers 501 node_api_off", async () => {
    const reply = await suite.api.post("/v1/node/usage", { items: [] }, { token: "anything" })
    expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 501, code: "node_api_off" })
  })
})
