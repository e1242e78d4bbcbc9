import { Email, Jobs, Kernel, Orgs } from "@hostplane/core"
import { Effect, Option } from "effect"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { auditOf, type TestServer, unique, useSuite } from "./support/TestServer.ts"

const mailDomain = "mail.example.test"

const insertRow = (server: TestServer, row: Partial<Email.MailLogRow> & { projectId: Kernel.ProjectId }) =>
  server.run(
    Effect.gen(function* () {
      const id = Kernel.makeId("mail", `mail_${unique("x").slice(2).replace("-", "")}`)
      yield* (yield* Email.EmailStore).insertLog({
        id,
        direction: "out",
        from: "app@x.test",
        to: "someone@y.test",
        subject: "hello",
        outcome: "sent",
        size: 5,
        spf: null,
        hasRaw: true,
        createdAt: new Date().toISOString(),
        providerMessageId: unique("msg"),
        raw: new TextEncoder().encode("From: app@x.test\r\n\r\nhello\r\n"),
        ...row
      })
      return id
    })
  )

describe.each(backends)("spec 4.8 email (%s)", (_name, stores) => {
  const suite = useSuite(stores, { mail: { mailDomain } })
  const { api, newOrg, newProject, withRole } = suite
  const path = (slug: string, project: string, rest = "") => `/v1/orgs/${slug}/projects/${project}/email${rest}`
  const fresh = async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    return { slug, project, address: `${project.name}.${slug}@${mailDomain}` }
  }
  const emailEvents = async (slug: string) =>
    (await auditOf(suite.server, slug))
      .filter((event) => event.action.startsWith("email."))
      .map((event) => ({ action: event.action, target: event.target, data: event.data }))

  it("status before a grant previews the address and from; granted is false", async () => {
    const { slug, project, address } = await fresh()
    const reply = await api.get(path(slug, project.name), { token: suite.admin.token })
    expect(reply).toMatchObject({
      status: 200,
      body: { granted: false, address, from: address, hourlyCap: 50, sent24h: 0, received24h: 0 }
    })
  })

  it("grant fixes <project>.<org>@<mail domain>, is idempotent and audits email.grant once", async () => {
    const { slug, project, address } = await fresh()
    const member = await withRole(slug, "member")
    const first = await api.post(path(slug, project.name), undefined, { token: member.token })
    expect(first).toMatchObject({ status: 200, body: { granted: true, address, from: address, hourlyCap: 50 } })
    const again = await api.post(path(slug, project.name), undefined, { token: member.token })
    expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: first.body })
    expect(await emailEvents(slug)).toEqual([
      { action: "email.grant", target: project.id, data: { project: project.name } }
    ])
    const detail = await api.get(`/v1/orgs/${slug}/projects/${project.name}`, { token: member.token })
    expect(detail.body.addons.email).toBe(true)
  })

  it("revoke is 204 even when off, audits email.revoke once, keeps the address; a new grant takes it back", async () => {
    const { slug, project, address } = await fresh()
    expect((await api.delete(path(slug, project.name), undefined, { token: suite.admin.token })).status).toBe(204)
    await api.post(path(slug, project.name), undefined, { token: suite.admin.token })
    expect((await api.delete(path(slug, project.name), undefined, { token: suite.admin.token })).status).toBe(204)
    expect((await api.delete(path(slug, project.name), undefined, { token: suite.admin.token })).status).toBe(204)
    const status = await api.get(path(slug, project.name), { token: suite.admin.token })
    expect(status.body).toMatchObject({ granted: false, address })
    const regrant = await api.post(path(slug, project.name), undefined, { token: suite.admin.token })
    expect(regrant.body).toMatchObject({ granted: true, address })
    expect((await emailEvents(slug)).map((event) => event.action)).toEqual([
      "email.grant",
      "email.revoke",
      "email.grant"
    ])
  })

  it("an address another project holds is 409 email_address_taken, and nothing is granted", async () => {
    const { slug, project, address } = await fresh()
    const other = await fresh()
    // The address stays with the project that had it (kept after a revoke, and after that project is deleted).
    await suite.server.run(
      Effect.flatMap(Email.EmailStore, (store) =>
        store.saveAddress({ projectId: other.project.id, address, granted: false })
      )
    )
    const reply = await api.post(path(slug, project.name), undefined, { token: suite.admin.token })
    expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 409, code: "email_address_taken" })
    expect((await api.get(path(slug, project.name), { token: suite.admin.token })).body.granted).toBe(false)
    expect(await emailEvents(slug)).toEqual([])
  })

  it("a project named under an org it does not belong to is 404 not_found on every email route, whatever the role", async () => {
    const { slug } = await fresh()
    const other = await fresh()
    // Granted in its own org, with a log row: a route that found it through the wrong org would answer them.
    expect((await api.post(path(other.slug, other.project.name), undefined, { token: suite.admin.token })).status).toBe(
      200
    )
    const row = await insertRow(suite.server, { projectId: other.project.id })
    const viewer = await withRole(slug, "viewer")
    const routes = (name: string) =>
      [
        ["GET", path(slug, name)],
        ["POST", path(slug, name)],
        ["DELETE", path(slug, name)],
        ["GET", path(slug, name, "/log")],
        ["GET", path(slug, name, `/log/${row}`)],
        ["GET", path(slug, name, `/log/${row}/raw`)]
      ] as const
    for (const [token, name] of [
      [suite.admin.token, other.project.name],
      [viewer.token, other.project.name],
      [suite.admin.token, "no-such-project"]
    ] as const) {
      for (const [method, route] of routes(name)) {
        const reply = await api.call(method, route, { token })
        expect({ method, route, status: reply.status, code: reply.body.code }).toEqual({
          method,
          route,
          status: 404,
          code: "not_found"
        })
      }
    }
    expect((await api.get(path(other.slug, other.project.name), { token: suite.admin.token })).body.granted).toBe(true)
    expect(await emailEvents(slug)).toEqual([])
  })

  describe("roles", () => {
    const setup = async (slug: string) => (await newProject(slug)).name
    itChecksRoles(suite, {
      name: "GET email",
      min: "viewer",
      setup,
      request: (slug, project) => ({ method: "GET", path: path(slug, project) }),
      ok: 200
    })
    itChecksRoles(suite, {
      name: "POST email",
      min: "member",
      setup,
      request: (slug, project) => ({ method: "POST", path: path(slug, project) }),
      ok: 200
    })
    itChecksRoles(suite, {
      name: "DELETE email",
      min: "admin",
      setup,
      request: (slug, project) => ({ method: "DELETE", path: path(slug, project) }),
      ok: 204
    })
    const withRow = async (slug: string) => {
      const project = await newProject(slug)
      return { name: project.name, id: await insertRow(suite.server, { projectId: project.id }) }
    }
    itChecksRoles(suite, {
      name: "GET email/log",
      min: "viewer",
      setup: withRow,
      request: (slug, row) => ({ method: "GET", path: path(slug, row.name, "/log") }),
      ok: 200
    })
    itChecksRoles(suite, {
      name: "GET email/log/{mailId}",
      min: "viewer",
      setup: withRow,
      request: (slug, row) => ({ method: "GET", path: path(slug, row.name, `/log/${row.id}`) }),
      ok: 200
    })
    itChecksRoles(suite, {
      name: "GET email/log/{mailId}/raw",
      min: "viewer",
      setup: withRow,
      request: (slug, row) => ({ method: "GET", path: path(slug, row.name, `/log/${row.id}/raw`) }),
      ok: 200
    })
  })

  describe("log", () => {
    it("is newest first, filtered by direction, paged by cursor; counts the last 24 hours in the status", async () => {
      const { slug, project } = await fresh()
      const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000).toISOString()
      const old = await insertRow(suite.server, { projectId: project.id, createdAt: at(25 * 60) })
      const sent = await insertRow(suite.server, { projectId: project.id, createdAt: at(30) })
      const inbound = await insertRow(suite.server, {
        projectId: project.id,
        createdAt: at(20),
        direction: "in",
        outcome: "received",
        spf: "pass"
      })
      const newest = await insertRow(suite.server, { projectId: project.id, createdAt: at(10) })
      const token = suite.admin.token
      const all = await api.get(path(slug, project.name, "/log"), { token })
      expect(all.status).toBe(200)
      expect(all.body.items.map((row: { id: string }) => row.id)).toEqual([newest, inbound, sent, old])
      expect(all.body.nextCursor).toBeNull()
      expect(all.body.items[1]).toEqual({
        id: inbound,
        direction: "in",
        from: "app@x.test",
        to: "someone@y.test",
        subject: "hello",
        outcome: "received",
        size: 5,
        spf: "pass",
        hasRaw: true,
        createdAt: expect.any(String)
      })
      const incoming = await api.get(path(slug, project.name, "/log?direction=in"), { token })
      expect(incoming.body.items.map((row: { id: string }) => row.id)).toEqual([inbound])
      const both = await api.get(path(slug, project.name, "/log?direction="), { token })
      expect(both.body.items).toHaveLength(4)
      const first = await api.get(path(slug, project.name, "/log?limit=3"), { token })
      expect(first.body.items).toHaveLength(3)
      const second = await api.get(
        path(slug, project.name, `/log?limit=3&cursor=${encodeURIComponent(first.body.nextCursor)}`),
        { token }
      )
      expect(second.body).toEqual({ items: [expect.objectContaining({ id: old })], nextCursor: null })
      const status = await api.get(path(slug, project.name), { token })
      expect(status.body).toMatchObject({ sent24h: 2, received24h: 1 })
    })

    it("the mail_log_purge job drops rows past the org plan's keepDays (30 free, 365 pro); the log shows the rest", async () => {
      const free = await fresh()
      const pro = await fresh()
      await suite.server.run(
        Effect.gen(function* () {
          const orgs = yield* Orgs.OrgStore
          yield* orgs.setPlan(Option.getOrThrow(yield* orgs.findBySlug(pro.slug)).id, "pro")
        })
      )
      const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString()
      const freeOld = await insertRow(suite.server, { projectId: free.project.id, createdAt: daysAgo(31) })
      const freeKept = await insertRow(suite.server, { projectId: free.project.id, createdAt: daysAgo(29) })
      const proKept = await insertRow(suite.server, { projectId: pro.project.id, createdAt: daysAgo(364) })
      const proOld = await insertRow(suite.server, { projectId: pro.project.id, createdAt: daysAgo(366) })
      const ids = async (at: { slug: string; project: { name: string } }) =>
        (await api.get(path(at.slug, at.project.name, "/log"), { token: suite.admin.token })).body.items.map(
          (row: { id: string }) => row.id
        )
      expect(await ids(free)).toEqual([freeKept, freeOld])
      expect(await ids(pro)).toEqual([proKept, proOld])
      // The job the server's runner runs every hour (one always exists), run here once.
      expect(await suite.server.run(Jobs.JobRunner.runOnce([Email.mailPurgeHandler]))).toBe(1)
      expect(await ids(free)).toEqual([freeKept])
      expect(await ids(pro)).toEqual([proKept])
      const gone = await api.get(path(free.slug, free.project.name, `/log/${freeOld}`), { token: suite.admin.token })
      expect({ status: gone.status, code: gone.body.code }).toEqual({ status: 404, code: "not_found" })
    })

    it("a bad direction, cursor or limit is 400", async () => {
      const { slug, project } = await fresh()
      for (const query of ["direction=both", "cursor=nonsense", "limit=0", "limit=201", "limit=x"]) {
        const reply = await api.get(path(slug, project.name, `/log?${query}`), { token: suite.admin.token })
        expect({ query, status: reply.status, code: reply.body.code }).toEqual({
          query,
          status: 400,
          code: "bad_request"
        })
      }
    })

    it("an entry by id; another project's id and an unknown id are 404", async () => {
      const { slug, project } = await fresh()
      const other = await fresh()
      const id = await insertRow(suite.server, { projectId: project.id })
      const foreign = await insertRow(suite.server, { projectId: other.project.id })
      const token = suite.admin.token
      expect((await api.get(path(slug, project.name, `/log/${id}`), { token })).body.id).toBe(id)
      for (const mailId of [foreign, "mail_unknown"]) {
        const reply = await api.get(path(slug, project.name, `/log/${mailId}`), { token })
        expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 404, code: "not_found" })
        const raw = await api.get(path(slug, project.name, `/log/${mailId}/raw`), { token })
        expect({ status: raw.status, code: raw.body.code }).toEqual({ status: 404, code: "not_found" })
      }
    })

    it("raw downloads as message/rfc822 with an .eml name, byte for byte; hasRaw false is 404", async () => {
      const { slug, project } = await fresh()
      const bytes = new Uint8Array([...new TextEncoder().encode("Subject: caf\u00e9\r\n\r\n"), 0xff, 0x00, 0x0d, 0x0a])
      const id = await insertRow(suite.server, { projectId: project.id, raw: bytes, size: bytes.length })
      const refused = await insertRow(suite.server, {
        projectId: project.id,
        direction: "in",
        outcome: "refused",
        raw: null,
        hasRaw: false
      })
      const response = await fetch(`${suite.server.url}${path(slug, project.name, `/log/${id}/raw`)}`, {
        headers: { authorization: `Bearer ${suite.admin.token}` }
      })
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toBe("message/rfc822")
      expect(response.headers.get("content-disposition")).toBe(`attachment; filename="${id}.eml"`)
      expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes)
      const entry = await api.get(path(slug, project.name, `/log/${refused}`), { token: suite.admin.token })
      expect(entry.body.hasRaw).toBe(false)
      const missing = await api.get(path(slug, project.name, `/log/${refused}/raw`), { token: suite.admin.token })
      expect({ status: missing.status, code: missing.body.code }).toEqual({ status: 404, code: "not_found" })
    })
  })
})

describe.each(backends)("spec 4.8 email without a mail domain (%s)", (_name, stores) => {
  const suite = useSuite(stores, {})

  it("grant is 409 email_unavailable and writes nothing; the status still answers", async () => {
    const slug = await suite.newOrg()
    const project = await suite.newProject(slug)
    const path = `/v1/orgs/${slug}/projects/${project.name}/email`
    const reply = await suite.api.post(path, undefined, { token: suite.admin.token })
    expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 409, code: "email_unavailable" })
    const status = await suite.api.get(path, { token: suite.admin.token })
    expect(status).toMatchObject({ status: 200, body: { granted: false, address: "", from: "" } })
    expect((await auditOf(suite.server, slug)).filter((event) => event.action.startsWith("email."))).toEqual([])
  })
})
