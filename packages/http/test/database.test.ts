import { Database, Jobs } from "@hostplane/core"
import { BackupStoreMemory, DatabaseNodeMemory } from "@hostplane/testkit"
import { Effect, Layer, Stream } from "effect"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { auditOf, logCapture, useSuite } from "./support/TestServer.ts"

const memoryNode = () => Layer.mergeAll(DatabaseNodeMemory.layer, BackupStoreMemory.layer)

describe.each(backends)("spec 4.6 database (%s)", (_name, stores) => {
  const { lines: logs, layer: captureLogs } = logCapture()
  const suite = useSuite(stores, {}, captureLogs, undefined, { database: memoryNode() })
  const { api, newOrg, newProject, withRole } = suite
  const dbOf = (slug: string, project: string) => `/v1/orgs/${slug}/projects/${project}/database`
  const admin = () => ({ token: suite.admin.token })
  const runOperations = () =>
    suite.server.run(
      Effect.flatMap(Effect.service(Database.Databases), (databases) =>
        Jobs.JobRunner.runOnce(databases.handlers.map((handler) => Effect.succeed(handler)))
      )
    )

  const projectIn = async (slug: string) => (await newProject(slug)).name
  const withDatabase = async (slug: string) => {
    const project = await projectIn(slug)
    const created = await api.post(dbOf(slug, project), undefined, admin())
    expect(created.status).toBe(200)
    return project
  }

  itChecksRoles(suite, {
    name: "GET database",
    min: "viewer",
    setup: projectIn,
    request: (slug, project) => ({ method: "GET", path: dbOf(slug, project) }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "POST database",
    min: "member",
    setup: projectIn,
    request: (slug, project) => ({ method: "POST", path: dbOf(slug, project) }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "GET database/connect",
    min: "member",
    setup: withDatabase,
    request: (slug, project) => ({ method: "GET", path: `${dbOf(slug, project)}/connect` }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "GET database/endpoint",
    min: "viewer",
    setup: withDatabase,
    request: (slug, project) => ({ method: "GET", path: `${dbOf(slug, project)}/endpoint` }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "GET database/tokens",
    min: "member",
    setup: withDatabase,
    request: (slug, project) => ({ method: "GET", path: `${dbOf(slug, project)}/tokens` }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "POST database/tokens",
    min: "member",
    setup: withDatabase,
    request: (slug, project) => ({ method: "POST", path: `${dbOf(slug, project)}/tokens`, body: {} }),
    ok: 201
  })
  itChecksRoles(suite, {
    name: "DELETE database/tokens/{tokenUser}",
    min: "member",
    setup: withDatabase,
    request: async (slug, project) => {
      const created = await api.post(`${dbOf(slug, project)}/tokens`, {}, admin())
      return { method: "DELETE", path: `${dbOf(slug, project)}/tokens/${created.body.user}` }
    },
    ok: 204
  })
  itChecksRoles(suite, {
    name: "POST database/export",
    min: "member",
    setup: withDatabase,
    request: (slug, project) => ({ method: "POST", path: `${dbOf(slug, project)}/export` }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "GET database/generations",
    min: "member",
    setup: projectIn,
    request: (slug, project) => ({ method: "GET", path: `${dbOf(slug, project)}/generations` }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "POST database/restore",
    min: "admin",
    setup: withDatabase,
    request: (slug, project) => ({
      method: "POST",
      path: `${dbOf(slug, project)}/restore`,
      body: { epoch: 1, seq: 1 }
    }),
    ok: 202
  })
  itChecksRoles(suite, {
    name: "POST database/delete",
    min: "admin",
    setup: withDatabase,
    request: (slug, project) => ({ method: "POST", path: `${dbOf(slug, project)}/delete`, body: { confirm: project } }),
    ok: 202
  })
  itChecksRoles(suite, {
    name: "GET database/operations/{opId}",
    min: "member",
    setup: async (slug) => {
      const project = await withDatabase(slug)
      const started = await api.post(`${dbOf(slug, project)}/delete`, { confirm: project }, admin())
      return { project, opId: started.body.operationId as string }
    },
    request: (slug, { project, opId }) => ({ method: "GET", path: `${dbOf(slug, project)}/operations/${opId}` }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "POST database/operations/{opId}/abort",
    min: "admin",
    setup: async (slug) => {
      const project = await withDatabase(slug)
      const started = await api.post(`${dbOf(slug, project)}/delete`, { confirm: project }, admin())
      return { project, opId: started.body.operationId as string }
    },
    request: (slug, { project, opId }) => ({
      method: "POST",
      path: `${dbOf(slug, project)}/operations/${opId}/abort`
    }),
    ok: 200
  })

  it("GET database is { db } only; POST creates it once: a repeat answers the same details, the password unchanged", async () => {
    const slug = await newOrg()
    const project = await projectIn(slug)
    expect((await api.get(dbOf(slug, project), admin())).body).toEqual({ db: false })
    const member = await withRole(slug, "member")
    const first = await api.post(dbOf(slug, project), undefined, { token: member.token })
    expect(first.status).toBe(200)
    expect(Object.keys(first.body).sort()).toEqual(["database", "host", "password", "port", "sslmode", "url", "user"])
    expect(first.body).toMatchObject({ database: "app", sslmode: "disable", host: "127.0.0.1" })
    const again = await api.post(dbOf(slug, project), undefined, { token: member.token })
    expect(again.body).toEqual(first.body)
    expect((await api.get(dbOf(slug, project), admin())).body).toEqual({ db: true })
    expect((await api.get(`${dbOf(slug, project)}/connect`, { token: member.token })).body).toEqual(first.body)
    const endpoint = await api.get(`${dbOf(slug, project)}/endpoint`, admin())
    expect(endpoint.body).toEqual({ host: "127.0.0.1", port: first.body.port, database: "app", sslmode: "disable" })
    const detail = await api.get(`/v1/orgs/${slug}/projects/${project}`, admin())
    expect(detail.body.addons.database).toBe(true)
    const events = (await auditOf(suite.server, slug)).filter((event) => event.action.startsWith("database."))
    expect(events.map((event) => [event.action, event.actorId])).toEqual([["database.create", member.userId]])
  })

  it("connect, endpoint and tokens of a project without a database are 404", async () => {
    const slug = await newOrg()
    const project = await projectIn(slug)
    for (const path of ["connect", "endpoint", "tokens"]) {
      const reply = await api.get(`${dbOf(slug, project)}/${path}`, admin())
      expect({ path, status: reply.status, code: reply.body.code }).toEqual({ path, status: 404, code: "not_found" })
    }
    expect((await api.post(`${dbOf(slug, project)}/export`, undefined, admin())).status).toBe(404)
    expect((await api.get(`${dbOf(slug, project)}/generations`, admin())).body).toEqual({ items: [] })
  })

  it("a token's password is shown once; the list holds users only; a deleted token is 404 the second time", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    const created = await api.post(`${dbOf(slug, project)}/tokens`, {}, admin())
    expect(created.status).toBe(201)
    expect(Object.keys(created.body).sort()).toEqual(["createdAt", "password", "user"])
    const list = await api.get(`${dbOf(slug, project)}/tokens`, admin())
    expect(list.body).toEqual({ items: [{ user: created.body.user, createdAt: created.body.createdAt }] })
    expect(JSON.stringify(list.body)).not.toContain(created.body.password)
    expect((await api.delete(`${dbOf(slug, project)}/tokens/${created.body.user}`, undefined, admin())).status).toBe(
      204
    )
    const again = await api.delete(`${dbOf(slug, project)}/tokens/${created.body.user}`, undefined, admin())
    expect({ status: again.status, code: again.body.code }).toEqual({ status: 404, code: "not_found" })
    const events = (await auditOf(suite.server, slug)).filter((event) => event.action.startsWith("database.token"))
    expect(events.map((event) => [event.action, event.data])).toEqual([
      ["database.token.create", { user: created.body.user }],
      ["database.token.delete", { user: created.body.user }]
    ])
    const everything = JSON.stringify({ audit: await auditOf(suite.server, slug), logs })
    expect(everything).not.toContain(created.body.password)
  })

  it("creation takes the baseline generation (epoch 1, seq 1); export is not listed and not restorable", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    const listed = await api.get(`${dbOf(slug, project)}/generations`, admin())
    expect(listed.body.items).toHaveLength(1)
    const [baseline] = listed.body.items
    expect(Object.keys(baseline).sort()).toEqual([
      "bytes",
      "createdAt",
      "epoch",
      "lastCheckedAt",
      "offsiteKey",
      "seq",
      "sha256"
    ])
    expect(baseline).toMatchObject({ epoch: 1, seq: 1, lastCheckedAt: null })
    expect(baseline.sha256).toMatch(/^[0-9a-f]{64}$/)
    const exported = await api.post(`${dbOf(slug, project)}/export`, undefined, admin())
    expect(exported.status).toBe(200)
    expect(exported.body.key).toMatch(/^exports\//)
    const second = await api.post(`${dbOf(slug, project)}/export`, undefined, admin())
    expect(second.body.key).not.toBe(exported.body.key)
    expect((await api.get(`${dbOf(slug, project)}/generations`, admin())).body.items).toEqual([baseline])
  })

  it("restore needs a listed { epoch, seq }: a bad body is 400, an unlisted pair 404; a second operation is 409 operation_in_progress", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    const bad = await api.post(`${dbOf(slug, project)}/restore`, { epoch: "latest" }, admin())
    expect({ status: bad.status, code: bad.body.code }).toEqual({ status: 400, code: "bad_request" })
    const unlisted = await api.post(`${dbOf(slug, project)}/restore`, { epoch: 1, seq: 9 }, admin())
    expect({ status: unlisted.status, code: unlisted.body.code }).toEqual({ status: 404, code: "not_found" })
    const started = await api.post(`${dbOf(slug, project)}/restore`, { epoch: 1, seq: 1 }, admin())
    expect(started.status).toBe(202)
    expect(started.body.operationId).toMatch(/^op_/)
    const busy = await api.post(`${dbOf(slug, project)}/restore`, { epoch: 1, seq: 1 }, admin())
    expect({ status: busy.status, code: busy.body.code }).toEqual({ status: 409, code: "operation_in_progress" })
    const deleting = await api.post(`${dbOf(slug, project)}/delete`, { confirm: project }, admin())
    expect({ status: deleting.status, code: deleting.body.code }).toEqual({
      status: 409,
      code: "operation_in_progress"
    })
    const suspended = await api.post(`${dbOf(slug, project)}/export`, undefined, admin())
    expect({ status: suspended.status, code: suspended.body.code }).toEqual({ status: 409, code: "suspended" })
    await runOperations()
    const done = await api.get(`${dbOf(slug, project)}/operations/${started.body.operationId}`, admin())
    expect(done.body).toMatchObject({ kind: "restore_generation", phase: "reactivation", terminalCode: "done" })
    const generations = (await api.get(`${dbOf(slug, project)}/generations`, admin())).body.items
    // The sealing phase kept the state before the restore; the restore moved the database to epoch 2.
    expect(generations.map((g: { epoch: number; seq: number }) => [g.epoch, g.seq])).toEqual([
      [1, 2],
      [1, 1]
    ])
    const events = (await auditOf(suite.server, slug)).filter((event) => event.action === "database.restore")
    expect(events.map((event) => event.data)).toEqual([{ operationId: started.body.operationId, epoch: 1, seq: 1 }])
  })

  it("delete needs confirm equal to the project name exactly: anything else is 400 confirm_mismatch and nothing starts", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    for (const confirm of [` ${project}`, project.toUpperCase(), ""]) {
      const reply = await api.post(`${dbOf(slug, project)}/delete`, { confirm }, admin())
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 400, code: "confirm_mismatch" })
    }
    expect((await api.get(dbOf(slug, project), admin())).body).toEqual({ db: true })
    const started = await api.post(`${dbOf(slug, project)}/delete`, { confirm: project }, admin())
    expect(started.status).toBe(202)
    await runOperations()
    const done = await api.get(`${dbOf(slug, project)}/operations/${started.body.operationId}`, admin())
    expect(done.body).toMatchObject({ kind: "delete", phase: "committing", terminalCode: "done" })
    expect((await api.get(dbOf(slug, project), admin())).body).toEqual({ db: false })
    // The final safety generation stays listed after the delete.
    const generations = (await api.get(`${dbOf(slug, project)}/generations`, admin())).body.items
    expect(generations.map((g: { epoch: number; seq: number }) => [g.epoch, g.seq])).toEqual([
      [1, 2],
      [1, 1]
    ])
    expect((await api.get(`${dbOf(slug, project)}/connect`, admin())).status).toBe(404)
  })

  it("an operation aborted before committing ends aborted and frees the database; a finished one is 409 not_abortable", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    const started = await api.post(`${dbOf(slug, project)}/restore`, { epoch: 1, seq: 1 }, admin())
    const aborted = await api.post(
      `${dbOf(slug, project)}/operations/${started.body.operationId}/abort`,
      undefined,
      admin()
    )
    expect(aborted.status).toBe(200)
    expect(aborted.body).toMatchObject({ id: started.body.operationId, kind: "restore_generation", phase: "draining" })
    await runOperations()
    const after = await api.get(`${dbOf(slug, project)}/operations/${started.body.operationId}`, admin())
    expect(after.body).toMatchObject({ terminalCode: "aborted" })
    const again = await api.post(
      `${dbOf(slug, project)}/operations/${started.body.operationId}/abort`,
      undefined,
      admin()
    )
    expect({ status: again.status, code: again.body.code }).toEqual({ status: 409, code: "not_abortable" })
    // Freed: a new operation may start, and the database answers again.
    expect((await api.post(`${dbOf(slug, project)}/export`, undefined, admin())).status).toBe(200)
    const next = await api.post(`${dbOf(slug, project)}/restore`, { epoch: 1, seq: 1 }, admin())
    expect(next.status).toBe(202)
  })

  it("an operation is found only under its own project: another project's path is 404", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    const other = await withDatabase(slug)
    const started = await api.post(`${dbOf(slug, project)}/delete`, { confirm: project }, admin())
    const elsewhere = await api.get(`${dbOf(slug, other)}/operations/${started.body.operationId}`, admin())
    expect({ status: elsewhere.status, code: elsewhere.body.code }).toEqual({ status: 404, code: "not_found" })
    const unknown = await api.get(`${dbOf(slug, project)}/operations/op_missing`, admin())
    expect(unknown.status).toBe(404)
    const foreignAbort = await api.post(
      `${dbOf(slug, other)}/operations/${started.body.operationId}/abort`,
      undefined,
      admin()
    )
    expect(foreignAbort.status).toBe(404)
  })

  it("the checker re-hashes every generation: a match sets lastCheckedAt, a corrupted image is never trusted", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    await suite.server.run(Effect.flatMap(Effect.service(Database.Databases), (databases) => databases.checkDue))
    const [checked] = (await api.get(`${dbOf(slug, project)}/generations`, admin())).body.items
    expect(checked.lastCheckedAt).toEqual(expect.any(String))
    // Corrupt the stored image: a restore refuses it before draining anything.
    await suite.server.run(
      Effect.flatMap(Effect.service(Database.BackupStore) as Effect.Effect<Database.BackupStore["Service"]>, (store) =>
        store.put(checked.offsiteKey, Stream.make(new TextEncoder().encode("garbage")))
      )
    )
    const started = await api.post(`${dbOf(slug, project)}/restore`, { epoch: 1, seq: 1 }, admin())
    await runOperations()
    const failed = await api.get(`${dbOf(slug, project)}/operations/${started.body.operationId}`, admin())
    expect(failed.body).toMatchObject({ phase: "draining", terminalCode: "failed" })
    expect((await api.post(`${dbOf(slug, project)}/export`, undefined, admin())).status).toBe(200)
  })
})

describe("spec 4.6 database without a node admin", () => {
  const suite = useSuite(backends[1]![1])
  it("creating, connecting and exporting answer 503 no_node_admin; the flags and lists still answer", async () => {
    const slug = await suite.newOrg()
    const project = (await suite.newProject(slug)).name
    const path = `/v1/orgs/${slug}/projects/${project}/database`
    const token = { token: suite.admin.token }
    const created = await suite.api.post(path, undefined, token)
    expect({ status: created.status, code: created.body.code }).toEqual({ status: 503, code: "no_node_admin" })
    expect((await suite.api.get(path, token)).body).toEqual({ db: false })
    expect((await suite.api.get(`${path}/generations`, token)).body).toEqual({ items: [] })
  })
})
