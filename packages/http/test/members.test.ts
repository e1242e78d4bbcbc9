import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { auditOf, unique, useSuite } from "./support/TestServer.ts"

describe.each(backends)("spec 4.2 members (%s)", (_name, stores) => {
  const suite = useSuite(stores)
  const { api } = suite

  const newOrg = () => suite.newOrg("Team")
  const add = (slug: string, role: "viewer" | "member" | "admin") =>
    suite.withRole(slug, role, { email: `${unique("m")}@example.test` })

  const members = (slug: string) => `/v1/orgs/${slug}/members`
  itChecksRoles(suite, {
    name: "GET members",
    min: "member",
    request: (slug) => ({ method: "GET", path: members(slug) }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "POST members",
    min: "admin",
    request: async (slug) => {
      const user = await api.login(unique("new"))
      return { method: "POST", path: members(slug), body: { provider: "dev", subject: user.subject, role: "member" } }
    },
    ok: 201
  })
  itChecksRoles(suite, {
    name: "PUT member role",
    min: "admin",
    request: async (slug) => ({
      method: "PUT",
      path: `${members(slug)}/${(await add(slug, "member")).userId}`,
      body: { role: "viewer" }
    }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "DELETE another member",
    min: "admin",
    request: async (slug) => ({ method: "DELETE", path: `${members(slug)}/${(await add(slug, "member")).userId}` }),
    ok: 204
  })

  it("GET members lists every member with its fields", async () => {
    const slug = await newOrg()
    const member = await add(slug, "member")
    await add(slug, "viewer")
    const reply = await api.get(`/v1/orgs/${slug}/members`, { token: member.token })
    expect(reply.status).toBe(200)
    expect(reply.body.items).toHaveLength(3)
    const self = reply.body.items.find((m: { userId: string }) => m.userId === member.userId)
    expect(Object.keys(self).sort()).toEqual(["email", "joinedAt", "name", "provider", "role", "subject", "userId"])
    expect(self).toMatchObject({ provider: "dev", subject: member.subject, role: "member" })
  })

  it("POST members adds an existing user (201 Member) and writes member.add", async () => {
    const slug = await newOrg()
    const user = await api.login(unique("new"))
    const reply = await api.post(
      `/v1/orgs/${slug}/members`,
      { provider: "dev", subject: user.subject, role: "viewer" },
      { token: suite.admin.token }
    )
    expect(reply.status).toBe(201)
    expect(reply.body).toMatchObject({ userId: user.userId, role: "viewer", provider: "dev", subject: user.subject })
    const event = (await auditOf(suite.server, slug)).find((e) => e.action === "member.add")
    expect(event).toMatchObject({ actorId: suite.admin.userId, target: user.userId, data: { role: "viewer" } })
    const orgs = await api.get("/v1/orgs", { token: user.token })
    expect(orgs.body.items).toContainEqual(expect.objectContaining({ slug, role: "viewer" }))
  })

  it("POST members for an unknown user is 404 user_not_found", async () => {
    const slug = await newOrg()
    const reply = await api.post(
      `/v1/orgs/${slug}/members`,
      { provider: "dev", subject: unique("ghost"), role: "member" },
      { token: suite.admin.token }
    )
    expect(reply.status).toBe(404)
    expect(reply.body.code).toBe("user_not_found")
  })

  it("POST members for someone already in the org is 409 already_member", async () => {
    const slug = await newOrg()
    const member = await add(slug, "member")
    const reply = await api.post(
      `/v1/orgs/${slug}/members`,
      { provider: "dev", subject: member.subject, role: "admin" },
      { token: suite.admin.token }
    )
    expect(reply.status).toBe(409)
    expect(reply.body.code).toBe("already_member")
    const added = (await auditOf(suite.server, slug)).filter((e) => e.action === "member.add")
    expect(added.map((e) => e.target)).toEqual([member.userId])
  })

  it("POST members: bad role 400", async () => {
    const slug = await newOrg()
    const body = { provider: "dev", subject: suite.outsider.subject, role: "member" }
    const bad = await api.post(`/v1/orgs/${slug}/members`, { ...body, role: "owner" }, { token: suite.admin.token })
    expect(bad.status).toBe(400)
    expect(bad.body.code).toBe("bad_request")
  })

  it("PUT role changes the role (200 Member) and writes member.role", async () => {
    const slug = await newOrg()
    const member = await add(slug, "member")
    const reply = await api.put(
      `/v1/orgs/${slug}/members/${member.userId}`,
      { role: "admin" },
      { token: suite.admin.token }
    )
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({ userId: member.userId, role: "admin" })
    const event = (await auditOf(suite.server, slug)).find((e) => e.action === "member.role")
    expect(event).toMatchObject({ target: member.userId, data: { from: "member", role: "admin" } })
  })

  it("demoting the last admin (self included) is 409 last_admin", async () => {
    const slug = await newOrg()
    const reply = await api.put(
      `/v1/orgs/${slug}/members/${suite.admin.userId}`,
      { role: "member" },
      { token: suite.admin.token }
    )
    expect(reply.status).toBe(409)
    expect(reply.body.code).toBe("last_admin")
    const listed = await api.get(`/v1/orgs/${slug}/members`, { token: suite.admin.token })
    expect(listed.body.items.find((m: { userId: string }) => m.userId === suite.admin.userId).role).toBe("admin")
    expect((await auditOf(suite.server, slug)).filter((e) => e.action === "member.role")).toEqual([])
  })

  it("an admin may demote themself while another admin remains, and then may not promote themself back", async () => {
    const slug = await newOrg()
    await add(slug, "admin")
    const reply = await api.put(
      `/v1/orgs/${slug}/members/${suite.admin.userId}`,
      { role: "viewer" },
      { token: suite.admin.token }
    )
    expect(reply.status).toBe(200)
    expect(reply.body.role).toBe("viewer")
    const back = await api.put(
      `/v1/orgs/${slug}/members/${suite.admin.userId}`,
      { role: "admin" },
      { token: suite.admin.token }
    )
    expect(back.status).toBe(403)
    expect(back.body.code).toBe("forbidden")
  })

  it("PUT role: unknown user or a user outside the org 404, bad role 400", async () => {
    const slug = await newOrg()
    const member = await add(slug, "member")
    const path = `/v1/orgs/${slug}/members/${member.userId}`
    for (const userId of ["usr_nobody", suite.outsider.userId]) {
      const reply = await api.put(`/v1/orgs/${slug}/members/${userId}`, { role: "admin" }, { token: suite.admin.token })
      expect(reply.status).toBe(404)
    }
    expect((await api.put(path, { role: "root" }, { token: suite.admin.token })).status).toBe(400)
  })

  it("DELETE another member by an admin: 204, member.remove; the removed member no longer sees the org", async () => {
    const slug = await newOrg()
    const b = await add(slug, "member")
    const reply = await api.delete(`/v1/orgs/${slug}/members/${b.userId}`, undefined, { token: suite.admin.token })
    expect(reply.status).toBe(204)
    const event = (await auditOf(suite.server, slug)).find((e) => e.action === "member.remove")
    expect(event).toMatchObject({ actorId: suite.admin.userId, target: b.userId })
    const listed = await api.get(`/v1/orgs/${slug}/members`, { token: suite.admin.token })
    expect(listed.body.items.map((m: { userId: string }) => m.userId)).not.toContain(b.userId)
    expect((await api.get(`/v1/orgs/${slug}/members`, { token: b.token })).status).toBe(404)
  })

  it("any member may leave (204, member.leave)", async () => {
    const slug = await newOrg()
    const viewer = await add(slug, "viewer")
    const reply = await api.delete(`/v1/orgs/${slug}/members/${viewer.userId}`, undefined, { token: viewer.token })
    expect(reply.status).toBe(204)
    const event = (await auditOf(suite.server, slug)).find((e) => e.action === "member.leave")
    expect(event).toMatchObject({ actorId: viewer.userId, target: viewer.userId })
    const orgs = await api.get("/v1/orgs", { token: viewer.token })
    expect(orgs.body.items.map((o: { slug: string }) => o.slug)).not.toContain(slug)
  })

  it("the last admin cannot leave or be removed: 409 last_admin", async () => {
    const slug = await newOrg()
    const reply = await api.delete(`/v1/orgs/${slug}/members/${suite.admin.userId}`, undefined, {
      token: suite.admin.token
    })
    expect(reply.status).toBe(409)
    expect(reply.body.code).toBe("last_admin")
  })

  it("with a second admin the first may leave; the one left is then the last admin (409 last_admin)", async () => {
    const slug = await newOrg()
    const first = await add(slug, "admin")
    const second = await add(slug, "member")
    const promoted = await api.put(
      `/v1/orgs/${slug}/members/${second.userId}`,
      { role: "admin" },
      { token: first.token }
    )
    expect(promoted.status).toBe(200)
    for (const session of [suite.admin, first]) {
      const left = await api.delete(`/v1/orgs/${slug}/members/${session.userId}`, undefined, { token: session.token })
      expect(left.status).toBe(204)
    }
    const listed = await api.get(`/v1/orgs/${slug}/members`, { token: second.token })
    expect(listed.body.items.map((m: { userId: string; role: string }) => [m.userId, m.role])).toEqual([
      [second.userId, "admin"]
    ])
    const last = await api.delete(`/v1/orgs/${slug}/members/${second.userId}`, undefined, { token: second.token })
    expect(last.status).toBe(409)
    expect(last.body.code).toBe("last_admin")
  })

  it("DELETE member: an unknown user or one outside the org is 404; so is an outsider removing themself", async () => {
    const slug = await newOrg()
    for (const userId of ["usr_nobody", suite.outsider.userId]) {
      expect(
        (await api.delete(`/v1/orgs/${slug}/members/${userId}`, undefined, { token: suite.admin.token })).status
      ).toBe(404)
    }
    const self = await api.delete(`/v1/orgs/${slug}/members/${suite.outsider.userId}`, undefined, {
      token: suite.outsider.token
    })
    expect(self.status).toBe(404)
  })
})
