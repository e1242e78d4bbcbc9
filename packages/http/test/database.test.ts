import { Database, Jobs, Mail, Projects, Secrets } from "@hostplane/core"
import { BackupStoreMemory, DatabaseNodeMemory } from "@hostplane/testkit"
import { Duration, Effect, Layer, Option, Stream } from "effect"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { auditOf, logCapture, type Suite, unique, useSuite } from "./support/TestServer.ts"

const memoryNode = () => Layer.mergeAll(DatabaseNodeMemory.layer, BackupStoreMemory.layer)

/** Sends every queued mail through a transport that keeps what it was handed. */
const mailer = (suite: Suite) => {
  const sent: Array<Mail.MailMessage> = []
  const run = () =>
    suite.server.run(
      Jobs.JobRunner.runOnce([Mail.sendMailHandler()]).pipe(
        Effect.provideService(Mail.MailTransport, {
          send: (message) => Effect.sync(() => void sent.push(message)),
          sendRaw: (message) => Effect.succeed(message.id)
        })
      )
    )
  return { sent, run }
}

describe.each(backends)("spec 4.6 database (%s)", (_name, stores) => {
  const { lines: logs, layer: captureLogs } = logCapture()
  // Every generation is due for its re-hash at each checker round.
  const suite = useSuite(stores, { database: { checkInterval: Duration.zero } }, captureLogs, undefined, {
    providers: [memoryNode()]
  })
  const { api, newOrg, newProject, withRole } = suite
  const dbOf = (slug: string, project: string) => `/v1/orgs/${slug}/projects/${project}/database`
  const admin = () => ({ token: suite.admin.token })
  const runOperations = () =>
    suite.server.run(
      Effect.flatMap(Effect.service(Database.Databases), (databases) =>
        Jobs.JobRunner.runOnce(databases.handlers.map((handler) => Effect.succeed(handler)))
      )
    )
  const notices = async (slug: string) => (await api.get(`/v1/orgs/${slug}/notifications`, admin())).body.items
  const checkNow = () =>
    suite.server.run(Effect.flatMap(Effect.service(Database.Databases), (databases) => databases.checkDue))

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
    expect(first.body).toMatchObject({ database: "app", sslmode: "require", host: "127.0.0.1" })
    expect(first.body.url).toMatch(/\?sslmode=require$/)
    const again = await api.post(dbOf(slug, project), undefined, { token: member.token })
    expect(again.body).toEqual(first.body)
    expect((await api.get(dbOf(slug, project), admin())).body).toEqual({ db: true })
    expect((await api.get(`${dbOf(slug, project)}/connect`, { token: member.token })).body).toEqual(first.body)
    const endpoint = await api.get(`${dbOf(slug, project)}/endpoint`, admin())
    expect(endpoint.body).toEqual({ host: "127.0.0.1", port: first.body.port, database: "app", sslmode: "require" })
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
    await checkNow()
    const [checked] = (await api.get(`${dbOf(slug, project)}/generations`, admin())).body.items
    expect(checked.lastCheckedAt).toEqual(expect.any(String))
    expect(await notices(slug)).toEqual([])
    // Corrupt the stored image: the checker reports it once, and a restore refuses it before draining anything.
    await suite.server.run(
      Effect.flatMap(Effect.service(Database.BackupStore) as Effect.Effect<Database.BackupStore["Service"]>, (store) =>
        store.put(checked.offsiteKey, Stream.make(new TextEncoder().encode("garbage")))
      )
    )
    await checkNow()
    await checkNow()
    const damaged = await notices(slug)
    expect(damaged).toEqual([
      expect.objectContaining({ kind: "backup", projectName: project, message: expect.stringContaining("1/1") })
    ])
    expect(damaged[0].message).toContain("no longer matches")
    const [after] = (await api.get(`${dbOf(slug, project)}/generations`, admin())).body.items
    expect(after.lastCheckedAt).toBe(checked.lastCheckedAt)
    const started = await api.post(`${dbOf(slug, project)}/restore`, { epoch: 1, seq: 1 }, admin())
    await runOperations()
    const failed = await api.get(`${dbOf(slug, project)}/operations/${started.body.operationId}`, admin())
    expect(failed.body).toMatchObject({ phase: "draining", terminalCode: "failed" })
    const [restoreFailed] = await notices(slug)
    expect(restoreFailed).toMatchObject({ kind: "restore", projectName: project })
    expect(restoreFailed.message).toContain("failed")
    expect((await api.post(`${dbOf(slug, project)}/export`, undefined, admin())).status).toBe(200)
  })

  it("a finished restore is a restore notification mailed to each admin with an address; the overview shows it and the last backup", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    const bossEmail = `${unique("boss")}@example.test`
    const memberEmail = `${unique("dev")}@example.test`
    await withRole(slug, "admin", { email: bossEmail })
    await withRole(slug, "member", { email: memberEmail })
    const overviewOf = async () =>
      (await api.get(`/v1/orgs/${slug}/projects/${project}/overview`, admin())).body as {
        lastBackup: unknown
        notifications: ReadonlyArray<unknown>
      }
    const [baseline] = (await api.get(`${dbOf(slug, project)}/generations`, admin())).body.items
    expect((await overviewOf()).lastBackup).toEqual({ epoch: 1, seq: 1, createdAt: baseline.createdAt })
    const started = await api.post(`${dbOf(slug, project)}/restore`, { epoch: 1, seq: 1 }, admin())
    await runOperations()
    expect(
      (await api.get(`${dbOf(slug, project)}/operations/${started.body.operationId}`, admin())).body
    ).toMatchObject({ terminalCode: "done" })
    const [notice] = await notices(slug)
    expect(Object.keys(notice).sort()).toEqual(["createdAt", "id", "kind", "message", "projectName", "sentAt"])
    expect(notice).toMatchObject({ kind: "restore", projectName: project, sentAt: null })
    expect(notice.id).toMatch(/^ntf_/)
    expect(notice.message).toContain("restored to generation 1/1")
    expect(notice.message).toContain("kept as generation 1/2")
    // The overview: the sealing generation is the newest, and the notice is among the recent ones.
    const overview = await overviewOf()
    expect(overview.lastBackup).toMatchObject({ epoch: 1, seq: 2 })
    expect(overview.notifications).toContainEqual(notice)
    const { sent, run } = mailer(suite)
    await run()
    const toBoss = sent.filter((mail) => mail.to === bossEmail)
    expect(toBoss).toHaveLength(1)
    expect(toBoss[0]!.subject).toContain(project)
    expect(toBoss[0]!.text).toBe(notice.message)
    expect(sent.filter((mail) => mail.to === memberEmail)).toEqual([])
    const [mailed] = await notices(slug)
    expect(mailed.sentAt).toEqual(expect.any(String))
  })

  it("while the project's delete runs, export and restore are 409 suspended and a database delete 409 operation_in_progress, naming that operation", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    const dropped = await api.delete(`/v1/orgs/${slug}/projects/${project}`, { confirm: project }, admin())
    expect(dropped.status).toBe(202)
    const operationId = dropped.body.operationId
    const exported = await api.post(`${dbOf(slug, project)}/export`, undefined, admin())
    expect({ status: exported.status, code: exported.body.code, details: exported.body.details }).toEqual({
      status: 409,
      code: "suspended",
      details: { operationId }
    })
    const restored = await api.post(`${dbOf(slug, project)}/restore`, { epoch: 1, seq: 1 }, admin())
    expect({ status: restored.status, code: restored.body.code, details: restored.body.details }).toEqual({
      status: 409,
      code: "suspended",
      details: { operationId }
    })
    const deleted = await api.post(`${dbOf(slug, project)}/delete`, { confirm: project }, admin())
    expect({ status: deleted.status, code: deleted.body.code, details: deleted.body.details }).toEqual({
      status: 409,
      code: "operation_in_progress",
      details: { operationId }
    })
    // The checks before the state still come first: a viewer is 403, a bad body 400, an outsider 404.
    const viewer = await withRole(slug, "viewer")
    expect(
      (await api.post(`${dbOf(slug, project)}/restore`, { epoch: 1, seq: 1 }, { token: viewer.token })).status
    ).toBe(403)
    expect((await api.post(`${dbOf(slug, project)}/restore`, { epoch: "latest" }, admin())).status).toBe(400)
    const stranger = await newOrg()
    expect(
      (await api.post(`/v1/orgs/${stranger}/projects/${project}/database/export`, undefined, admin())).status
    ).toBe(404)
    // Nothing was started, and nothing was written to the audit log.
    const events = (await auditOf(suite.server, slug)).filter((event) =>
      ["database.restore", "database.delete"].includes(event.action)
    )
    expect(events).toEqual([])
  })

  /** Runs a finished operation's last step again, as a runner does when its process died before recording it done. */
  const repeatLastStep = (opId: string, step: "reactivation" | "committing" | "aborted") =>
    suite.server.run(
      Effect.gen(function* () {
        const databases = yield* Database.Databases
        const row = Option.getOrThrow(yield* Effect.flatMap(Effect.service(Jobs.Jobs), (jobs) => jobs.get(opId)))
        const handler = databases.handlers.find((h) => h.definition.kind === row.kind)!
        const job = { ...row, payload: row.payload as any }
        if (step === "aborted") yield* handler.onAbort!(job)
        else yield* Effect.orDie(handler.run(step, { ...job, phase: step }))
      })
    )

  it("a crash right after the last step repeats it, and its notice is still told and mailed exactly once", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    const bossEmail = `${unique("boss")}@example.test`
    await withRole(slug, "admin", { email: bossEmail })
    const restored = await api.post(`${dbOf(slug, project)}/restore`, { epoch: 1, seq: 1 }, admin())
    await runOperations()
    await repeatLastStep(restored.body.operationId, "reactivation")
    const aborted = await api.post(`${dbOf(slug, project)}/restore`, { epoch: 1, seq: 1 }, admin())
    await api.post(`${dbOf(slug, project)}/operations/${aborted.body.operationId}/abort`, undefined, admin())
    await runOperations()
    await repeatLastStep(aborted.body.operationId, "aborted")
    const deleted = await api.post(`${dbOf(slug, project)}/delete`, { confirm: project }, admin())
    await runOperations()
    await repeatLastStep(deleted.body.operationId, "committing")
    const told = await notices(slug)
    expect(
      told.map((n: { kind: string; message: string }) => [n.kind, n.message.split(" ").slice(0, 6).join(" ")])
    ).toEqual([
      ["backup", `The database of project ${project} was`],
      ["restore", `The restore of the database of`],
      ["restore", `The database of project ${project} was`]
    ])
    const { sent, run } = mailer(suite)
    await run()
    expect(sent.filter((mail) => mail.to === bossEmail).map((mail) => mail.subject.split(" (")[0])).toEqual(
      expect.arrayContaining([
        `The database of ${project} was restored`,
        `The restore of ${project}'s database was aborted`,
        `The database of ${project} was deleted`
      ])
    )
    expect(sent.filter((mail) => mail.to === bossEmail)).toHaveLength(3)
  })

  it("an aborted restore is a restore notification; a delete is a backup notification naming the final safety generation", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    const started = await api.post(`${dbOf(slug, project)}/restore`, { epoch: 1, seq: 1 }, admin())
    await api.post(`${dbOf(slug, project)}/operations/${started.body.operationId}/abort`, undefined, admin())
    await runOperations()
    const [aborted] = await notices(slug)
    expect(aborted).toMatchObject({ kind: "restore", projectName: project })
    expect(aborted.message).toContain("aborted")
    await api.post(`${dbOf(slug, project)}/delete`, { confirm: project }, admin())
    await runOperations()
    const [deleted, ...older] = await notices(slug)
    expect(deleted).toMatchObject({ kind: "backup", projectName: project })
    expect(deleted.message).toContain("final safety generation 1/2")
    expect(older).toEqual([aborted])
    // Nobody with an address: the notice stays unsent.
    expect(deleted.sentAt).toBeNull()
  })
  it("a name that is not this project's is 404: another org's project under this org, another project's token, a role that is no token", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    const elsewhere = await newOrg()
    const theirs = await withDatabase(elsewhere)
    // Another org's project named under this org: the admin of both orgs still gets 404 here.
    for (const [method, path] of [
      ["GET", dbOf(slug, theirs)],
      ["POST", dbOf(slug, theirs)],
      ["GET", `${dbOf(slug, theirs)}/connect`],
      ["GET", `${dbOf(slug, theirs)}/generations`]
    ] as const) {
      const reply = await api.call(method, path, { token: suite.admin.token })
      expect({ method, path, status: reply.status, code: reply.body.code }).toEqual({
        method,
        path,
        status: 404,
        code: "not_found"
      })
    }
    // A token of another project (same org) cannot be deleted through this one; it keeps its place there.
    const other = await withDatabase(slug)
    const token = (await api.post(`${dbOf(slug, other)}/tokens`, {}, admin())).body
    const foreign = await api.delete(`${dbOf(slug, project)}/tokens/${token.user}`, undefined, admin())
    expect({ status: foreign.status, code: foreign.body.code }).toEqual({ status: 404, code: "not_found" })
    expect((await api.get(`${dbOf(slug, other)}/tokens`, admin())).body.items).toEqual([
      { user: token.user, createdAt: token.createdAt }
    ])
    // Nor is a role of the cluster that is not a token: the project role, the node's superuser.
    const owner = (await api.get(`${dbOf(slug, project)}/connect`, admin())).body.user
    for (const user of [owner, "postgres"]) {
      const reply = await api.delete(`${dbOf(slug, project)}/tokens/${user}`, undefined, admin())
      expect({ user, status: reply.status, code: reply.body.code }).toEqual({ user, status: 404, code: "not_found" })
    }
    expect((await api.get(`${dbOf(slug, project)}/connect`, admin())).body.user).toBe(owner)
    const events = (await auditOf(suite.server, slug)).filter((event) => event.action === "database.token.delete")
    expect(events).toEqual([])
  })

  it("an Operation has exactly id, kind, projectId, phase, terminalCode, createdAt, updatedAt; a delete is audited database.delete", async () => {
    const slug = await newOrg()
    const created = await newProject(slug)
    await api.post(dbOf(slug, created.name), undefined, admin())
    const started = await api.post(`${dbOf(slug, created.name)}/delete`, { confirm: created.name }, admin())
    const running = await api.get(`${dbOf(slug, created.name)}/operations/${started.body.operationId}`, admin())
    expect(Object.keys(running.body).sort()).toEqual([
      "createdAt",
      "id",
      "kind",
      "phase",
      "projectId",
      "terminalCode",
      "updatedAt"
    ])
    expect(running.body).toMatchObject({
      id: started.body.operationId,
      kind: "delete",
      projectId: created.id,
      phase: "draining",
      terminalCode: null
    })
    const events = (await auditOf(suite.server, slug)).filter((event) => event.action === "database.delete")
    expect(events.map((event) => [event.actorId, event.data])).toEqual([
      [suite.admin.userId, { operationId: started.body.operationId }]
    ])
  })

  it("a delete aborted before committing ends aborted: the database stays and takes work, a new operation may start", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    const before = (await api.get(`${dbOf(slug, project)}/connect`, admin())).body
    const started = await api.post(`${dbOf(slug, project)}/delete`, { confirm: project }, admin())
    const aborted = await api.post(
      `${dbOf(slug, project)}/operations/${started.body.operationId}/abort`,
      undefined,
      admin()
    )
    expect(aborted.body).toMatchObject({ kind: "delete", phase: "draining" })
    await runOperations()
    expect(
      (await api.get(`${dbOf(slug, project)}/operations/${started.body.operationId}`, admin())).body
    ).toMatchObject({ kind: "delete", terminalCode: "aborted" })
    expect((await api.get(dbOf(slug, project), admin())).body).toEqual({ db: true })
    expect((await api.get(`${dbOf(slug, project)}/connect`, admin())).body).toEqual(before)
    expect((await api.post(`${dbOf(slug, project)}/tokens`, {}, admin())).status).toBe(201)
    expect((await api.post(`${dbOf(slug, project)}/export`, undefined, admin())).status).toBe(200)
    expect((await api.post(`${dbOf(slug, project)}/delete`, { confirm: project }, admin())).status).toBe(202)
  })

  it("each reactivation takes one more than the highest epoch the database had: (epoch, seq) pairs never repeat", async () => {
    const slug = await newOrg()
    const project = await withDatabase(slug)
    for (let round = 0; round < 2; round++) {
      const started = await api.post(`${dbOf(slug, project)}/restore`, { epoch: 1, seq: 1 }, admin())
      expect(started.status).toBe(202)
      await runOperations()
    }
    // The delete's sealing phase takes the final safety generation on the epoch the second restore reactivated.
    await api.post(`${dbOf(slug, project)}/delete`, { confirm: project }, admin())
    await runOperations()
    const pairs = (await api.get(`${dbOf(slug, project)}/generations`, admin())).body.items.map(
      (g: { epoch: number; seq: number }) => [g.epoch, g.seq]
    )
    expect(pairs).toEqual([
      [3, 1],
      [2, 1],
      [1, 2],
      [1, 1]
    ])
  })

  it("a project delete takes its database: the cluster with the node data, then the images with the backups", async () => {
    const slug = await newOrg()
    const created = await newProject(slug)
    const kept = await withDatabase(slug)
    await api.post(dbOf(slug, created.name), undefined, admin())
    const [generation] = (await api.get(`${dbOf(slug, created.name)}/generations`, admin())).body.items
    const [keptGeneration] = (await api.get(`${dbOf(slug, kept)}/generations`, admin())).body.items
    const dropped = await api.delete(`/v1/orgs/${slug}/projects/${created.name}`, { confirm: created.name }, admin())
    expect(dropped.status).toBe(202)
    await suite.server.run(Jobs.JobRunner.runOnce([Projects.projectDeleteHandler]))
    expect((await api.get(`/v1/orgs/${slug}/operations/${dropped.body.operationId}`, admin())).body).toMatchObject({
      terminalCode: "done"
    })
    const [node, images] = await suite.server.run(
      Effect.all([
        Effect.service(Database.DatabaseNode) as Effect.Effect<Database.DatabaseNode["Service"]>,
        Effect.service(Database.BackupStore) as Effect.Effect<Database.BackupStore["Service"]>
      ])
    )
    const after = await suite.server.run(
      Effect.all([
        Effect.orDie(node.endpoint(created.id)),
        Effect.orDie(images.digest(generation.offsiteKey)),
        Effect.orDie(images.digest(keptGeneration.offsiteKey))
      ])
    )
    expect(after.slice(0, 2)).toEqual([undefined, undefined])
    expect(after[2]).toEqual({ bytes: keptGeneration.bytes, sha256: keptGeneration.sha256 })
    expect((await api.get(`${dbOf(slug, kept)}/connect`, admin())).status).toBe(200)
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

  it("a database this deployment recorded before it ran without a node admin: connect, endpoint, export and restore are 503 no_node_admin", async () => {
    const slug = await suite.newOrg()
    const project = await suite.newProject(slug)
    const path = `/v1/orgs/${slug}/projects/${project.name}/database`
    const token = { token: suite.admin.token }
    // The record as a create with a node admin left it (the node admin since taken out of this deployment).
    await suite.server.run(
      Effect.gen(function* () {
        const sealer = yield* Secrets.Sealer
        const store = yield* Database.DatabaseStore
        const sealed = yield* sealer.seal("a-password", Database.passwordContext(project.id))
        yield* store.create(project.id, sealed, new Date().toISOString(), null)
      }) as Effect.Effect<void>
    )
    expect((await suite.api.get(path, token)).body).toEqual({ db: true })
    const codeOf = (reply: { status: number; body: any }) => ({ status: reply.status, code: reply.body.code })
    const noAdmin = { status: 503, code: "no_node_admin" }
    expect(codeOf(await suite.api.get(`${path}/connect`, token))).toEqual(noAdmin)
    expect(codeOf(await suite.api.get(`${path}/endpoint`, token))).toEqual(noAdmin)
    expect(codeOf(await suite.api.post(`${path}/export`, undefined, token))).toEqual(noAdmin)
    expect(codeOf(await suite.api.post(`${path}/restore`, { epoch: 1, seq: 1 }, token))).toEqual(noAdmin)
    expect((await suite.api.get(`${path}/tokens`, token)).body).toEqual({ items: [] })
  })
})

describe("spec 4.6 database: a failing scheduled generation", () => {
  let failing = false
  const flaky = Layer.effect(
    Database.BackupStore,
    Effect.map(BackupStoreMemory.make, ({ store }) =>
      Database.BackupStore.of({
        ...store,
        put: (key, image) =>
          failing ? Effect.fail(new Database.BackupStoreError({ message: "the disk is full" })) : store.put(key, image)
      })
    )
  )
  const suite = useSuite(backends[1]![1], { database: { backupInterval: Duration.seconds(1) } }, undefined, undefined, {
    providers: [Layer.mergeAll(DatabaseNodeMemory.layer, flaky)]
  })
  const backupDue = () =>
    suite.server.run(Effect.flatMap(Effect.service(Database.Databases), (databases) => databases.backupDue))
  const nextBoundary = () => new Promise((resolve) => setTimeout(resolve, 1_100))

  it("is one backup notification per grid boundary, not one per round", async () => {
    const slug = await suite.newOrg()
    const project = (await suite.newProject(slug)).name
    const token = { token: suite.admin.token }
    expect((await suite.api.post(`/v1/orgs/${slug}/projects/${project}/database`, undefined, token)).status).toBe(200)
    failing = true
    await nextBoundary()
    await backupDue()
    await backupDue()
    const items = (await suite.api.get(`/v1/orgs/${slug}/notifications`, token)).body.items
    expect(items).toEqual([expect.objectContaining({ kind: "backup", projectName: project })])
    expect(items[0].message).toContain("failed")
    failing = false
    await nextBoundary()
    await backupDue()
    expect((await suite.api.get(`/v1/orgs/${slug}/notifications`, token)).body.items).toHaveLength(1)
    expect(
      (await suite.api.get(`/v1/orgs/${slug}/projects/${project}/database/generations`, token)).body.items
    ).toHaveLength(2)
  })
})

describe("spec 4.6 database: one generation at a time", () => {
  let gate: Promise<void> | undefined
  let inFlight = 0
  let most = 0
  const countingNode = Layer.effect(
    Database.DatabaseNode,
    Effect.map(DatabaseNodeMemory.make, (node) =>
      Database.DatabaseNode.of({
        ...node,
        backup: (projectId, write) =>
          Effect.acquireUseRelease(
            Effect.sync(() => {
              inFlight++
              most = Math.max(most, inFlight)
            }),
            () =>
              Effect.andThen(
                Effect.promise(() => gate ?? Promise.resolve()),
                node.backup(projectId, write)
              ),
            () => Effect.sync(() => void inFlight--)
          )
      })
    )
  )
  const suite = useSuite(backends[1]![1], { database: { backupInterval: Duration.seconds(1) } }, undefined, undefined, {
    providers: [Layer.mergeAll(countingNode, BackupStoreMemory.layer)]
  })

  it("a scheduled generation and a restore's sealing meet: the second waits for the first, each gets its own seq", async () => {
    const slug = await suite.newOrg()
    const project = (await suite.newProject(slug)).name
    const path = `/v1/orgs/${slug}/projects/${project}/database`
    const token = { token: suite.admin.token }
    expect((await suite.api.post(path, undefined, token)).status).toBe(200)
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    let open!: () => void
    gate = new Promise<void>((resolve) => (open = resolve))
    most = 0
    const withDatabases = <A>(use: (databases: Database.Databases["Service"]) => Effect.Effect<A>) =>
      suite.server.run(Effect.flatMap(Effect.service(Database.Databases), use) as Effect.Effect<A>)
    // The grid's generation starts and is held at the node; the restore accepted meanwhile seals while it is held.
    const scheduled = withDatabases((databases) => databases.backupDue)
    while (inFlight === 0) await new Promise((resolve) => setTimeout(resolve, 20))
    const started = await suite.api.post(`${path}/restore`, { epoch: 1, seq: 1 }, token)
    expect(started.status).toBe(202)
    const restoring = suite.server.run(
      Effect.flatMap(Effect.service(Database.Databases), (databases) =>
        Jobs.JobRunner.runOnce(databases.handlers.map((handler) => Effect.succeed(handler)))
      )
    )
    const operation = `${path}/operations/${started.body.operationId}`
    for (let tries = 0; (await suite.api.get(operation, token)).body.phase !== "sealing" && tries < 200; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
    gate = undefined
    open()
    await Promise.all([scheduled, restoring])
    expect(most).toBe(1)
    expect((await suite.api.get(operation, token)).body).toMatchObject({ terminalCode: "done" })
    const pairs = (await suite.api.get(`${path}/generations`, token)).body.items.map(
      (g: { epoch: number; seq: number }) => [g.epoch, g.seq]
    )
    expect(pairs).toEqual([
      [1, 3],
      [1, 2],
      [1, 1]
    ])
  })
})

describe("spec 4.6 database: a node that fails or has lost the database", () => {
  const state: {
    backupFails: boolean
    lost: boolean
    restoreFails: boolean
    /** While set, a backup waits for it before it starts (holds a sealing phase open). */
    backupGate: Promise<void> | undefined
  } = { backupFails: false, lost: false, restoreFails: false, backupGate: undefined }
  // What the node was asked to do, in order: [call, project id].
  const calls: Array<readonly [string, string]> = []
  const flakyNode = Layer.effect(
    Database.DatabaseNode,
    Effect.map(DatabaseNodeMemory.make, (node) =>
      Database.DatabaseNode.of({
        ...node,
        endpoint: (projectId) => (state.lost ? Effect.succeed(undefined) : node.endpoint(projectId)),
        drain: (projectId) =>
          Effect.andThen(
            Effect.sync(() => calls.push(["drain", projectId])),
            node.drain(projectId)
          ),
        resume: (projectId) =>
          Effect.andThen(
            Effect.sync(() => calls.push(["resume", projectId])),
            node.resume(projectId)
          ),
        remove: (projectId) =>
          Effect.andThen(
            Effect.sync(() => calls.push(["remove", projectId])),
            node.remove(projectId)
          ),
        restore: (projectId, image, epoch) =>
          state.restoreFails
            ? Effect.fail(new Database.DatabaseNodeError({ reason: "failed", message: "the image did not start" }))
            : node.restore(projectId, image, epoch),
        backup: (projectId, write) =>
          state.backupFails
            ? Effect.fail(new Database.DatabaseNodeError({ reason: "failed", message: "pg_backup_start refused" }))
            : state.backupGate === undefined
              ? node.backup(projectId, write)
              : Effect.andThen(
                  Effect.promise(() => state.backupGate!),
                  node.backup(projectId, write)
                )
      })
    )
  )
  const suite = useSuite(backends[1]![1], {}, undefined, undefined, {
    providers: [Layer.mergeAll(flakyNode, BackupStoreMemory.layer)]
  })
  const token = () => ({ token: suite.admin.token })
  const created = async () => {
    const slug = await suite.newOrg()
    const { name: project, id } = await suite.newProject(slug)
    const path = `/v1/orgs/${slug}/projects/${project}/database`
    expect((await suite.api.post(path, undefined, token())).status).toBe(200)
    return { path, project, slug, id }
  }
  const codeOf = (reply: { status: number; body: any }) => ({ status: reply.status, code: reply.body.code })

  it("an export the node cannot make is 502 export_failed; nothing is listed", async () => {
    const { path } = await created()
    state.backupFails = true
    try {
      expect(codeOf(await suite.api.post(`${path}/export`, undefined, token()))).toEqual({
        status: 502,
        code: "export_failed"
      })
    } finally {
      state.backupFails = false
    }
    expect((await suite.api.get(`${path}/generations`, token())).body.items).toHaveLength(1)
  })

  it("no node holding the database: connect, endpoint, export and restore are 503 no_home_node", async () => {
    const { path } = await created()
    state.lost = true
    try {
      expect(codeOf(await suite.api.get(`${path}/connect`, token()))).toEqual({ status: 503, code: "no_home_node" })
      expect(codeOf(await suite.api.get(`${path}/endpoint`, token()))).toEqual({ status: 503, code: "no_home_node" })
      expect(codeOf(await suite.api.post(`${path}/export`, undefined, token()))).toEqual({
        status: 503,
        code: "no_home_node"
      })
      expect(codeOf(await suite.api.post(`${path}/restore`, { epoch: 1, seq: 1 }, token()))).toEqual({
        status: 503,
        code: "no_home_node"
      })
    } finally {
      state.lost = false
    }
    // Nothing started: the database answers and a restore is accepted once the node holds it again.
    expect((await suite.api.post(`${path}/restore`, { epoch: 1, seq: 1 }, token())).status).toBe(202)
  })

  it("an operation still running at committing (not finished) is 409 not_abortable and keeps running", async () => {
    const { path } = await created()
    const started = await suite.api.post(`${path}/restore`, { epoch: 1, seq: 1 }, token())
    state.restoreFails = true
    try {
      await suite.server.run(
        Effect.flatMap(Effect.service(Database.Databases), (databases) =>
          Jobs.JobRunner.runOnce(databases.handlers.map((handler) => Effect.succeed(handler)))
        )
      )
    } finally {
      state.restoreFails = false
    }
    const operation = `${path}/operations/${started.body.operationId}`
    expect((await suite.api.get(operation, token())).body).toMatchObject({ phase: "committing", terminalCode: null })
    const refused = await suite.api.post(`${operation}/abort`, undefined, token())
    expect({ ...codeOf(refused), details: refused.body.details }).toEqual({
      status: 409,
      code: "not_abortable",
      details: { phase: "committing", terminalCode: null }
    })
    expect((await suite.api.get(operation, token())).body).toMatchObject({ phase: "committing", terminalCode: null })
  })

  it("once the project's delete is accepted its database is suspended: the delete's draining phase drains it, its data phase removes the cluster", async () => {
    const { path, project, slug, id: projectId } = await created()
    const dropped = await suite.api.delete(`/v1/orgs/${slug}/projects/${project}`, { confirm: project }, token())
    expect(dropped.status).toBe(202)
    expect(codeOf(await suite.api.post(`${path}/export`, undefined, token()))).toEqual({
      status: 409,
      code: "suspended"
    })
    await suite.server.run(Jobs.JobRunner.runOnce([Projects.projectDeleteHandler]))
    expect(
      (await suite.api.get(`/v1/orgs/${slug}/operations/${dropped.body.operationId}`, token())).body
    ).toMatchObject({ terminalCode: "done" })
    expect(calls.filter(([, id]) => id === projectId).map(([call]) => call)).toEqual(["drain", "remove"])
  })

  it("a restore not yet run when its project's delete is accepted ends failed without touching the database, which stays suspended", async () => {
    const { path, project, slug, id: projectId } = await created()
    const started = await suite.api.post(`${path}/restore`, { epoch: 1, seq: 1 }, token())
    expect(started.status).toBe(202)
    const dropped = await suite.api.delete(`/v1/orgs/${slug}/projects/${project}`, { confirm: project }, token())
    expect(dropped.status).toBe(202)
    await suite.server.run(
      Effect.flatMap(Effect.service(Database.Databases), (databases) =>
        Jobs.JobRunner.runOnce(databases.handlers.map((handler) => Effect.succeed(handler)))
      )
    )
    expect((await suite.api.get(`${path}/operations/${started.body.operationId}`, token())).body).toMatchObject({
      phase: "draining",
      terminalCode: "failed"
    })
    // Neither drained by the restore nor resumed when it ended: the node was not called.
    expect(calls.filter(([, id]) => id === projectId)).toEqual([])
    await suite.server.run(Jobs.JobRunner.runOnce([Projects.projectDeleteHandler]))
    expect(calls.filter(([, id]) => id === projectId).map(([call]) => call)).toEqual(["drain", "remove"])
  })

  it("a restore aborted during its sealing phase ends aborted after it: the sealed generation is kept, the database takes connections again", async () => {
    const { path, id: projectId } = await created()
    const started = await suite.api.post(`${path}/restore`, { epoch: 1, seq: 1 }, token())
    const operation = `${path}/operations/${started.body.operationId}`
    let open!: () => void
    state.backupGate = new Promise<void>((resolve) => (open = resolve))
    const running = suite.server.run(
      Effect.flatMap(Effect.service(Database.Databases), (databases) =>
        Jobs.JobRunner.runOnce(databases.handlers.map((handler) => Effect.succeed(handler)))
      )
    )
    try {
      for (let tries = 0; (await suite.api.get(operation, token())).body.phase !== "sealing" && tries < 200; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      const aborted = await suite.api.post(`${operation}/abort`, undefined, token())
      expect({ status: aborted.status, phase: aborted.body.phase }).toEqual({ status: 200, phase: "sealing" })
    } finally {
      state.backupGate = undefined
      open()
    }
    await running
    expect((await suite.api.get(operation, token())).body).toMatchObject({ phase: "sealing", terminalCode: "aborted" })
    const generations = (await suite.api.get(`${path}/generations`, token())).body.items
    expect(generations.map((g: { epoch: number; seq: number }) => [g.epoch, g.seq])).toEqual([
      [1, 2],
      [1, 1]
    ])
    expect(calls.filter(([, id]) => id === projectId).map(([call]) => call)).toEqual(["drain", "resume"])
    expect((await suite.api.post(`${path}/export`, undefined, token())).status).toBe(200)
  })

  it("bodies are checked: delete without confirm and restore without whole numbers are 400 bad_request", async () => {
    const { path } = await created()
    expect(codeOf(await suite.api.post(`${path}/delete`, {}, token()))).toEqual({ status: 400, code: "bad_request" })
    for (const body of [{ epoch: 1 }, { epoch: 0, seq: 1 }, { epoch: 1.5, seq: 1 }, "x"]) {
      expect(codeOf(await suite.api.post(`${path}/restore`, body, token()))).toEqual({
        status: 400,
        code: "bad_request"
      })
    }
    expect(codeOf(await suite.api.post(`${path}/tokens`, [], token()))).toEqual({ status: 400, code: "bad_request" })
    expect((await suite.api.get(path, token())).body).toEqual({ db: true })
  })
})
