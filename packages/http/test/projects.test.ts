import { Jobs, Projects } from "@hostplane/core"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { auditOf, unique, useSuite } from "./support/TestServer.ts"

describe.each(backends)("spec 4.3 projects (%s)", (_name, stores) => {
  const suite = useSuite(stores)
  const { api, newOrg, withRole } = suite
  const runOperations = () => suite.server.run(Jobs.JobRunner.runOnce([Projects.projectDeleteHandler]))

  it("POST projects is 201 Project with the default hostname <name>.<app domain>; project.create is audited", async () => {
    const slug = await newOrg()
    const name = unique("web")
    const reply = await api.post(`/v1/orgs/${slug}/projects`, { name }, { token: suite.admin.token })
    expect(reply.status).toBe(201)
    expect(Object.keys(reply.body).sort()).toEqual(["createdAt", "hostname", "id", "name"])
    expect(reply.body).toMatchObject({ name, hostname: `${name}.apps.localhost` })
    expect(reply.body.id).toMatch(/^prj_/)
    expect((await auditOf(suite.server, slug)).map((e) => e.action)).toContain("project.create")
    const list = await api.get(`/v1/orgs/${slug}/projects`, { token: suite.admin.token })
    expect(list.status).toBe(200)
    expect(list.body.items).toEqual([reply.body])
  })

  it("GET project answers ProjectDetail: no live deployment yet and no add-ons", async () => {
    const slug = await newOrg()
    const viewer = await withRole(slug, "viewer")
    await api.post(`/v1/orgs/${slug}/projects`, { name: "site" }, { token: suite.admin.token })
    const reply = await api.get(`/v1/orgs/${slug}/projects/site`, { token: viewer.token })
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({
      name: "site",
      liveDeployment: null,
      addons: { database: false, storage: false, email: false, auth: false, ai: false }
    })
  })

  it("GET overview (viewer): serving, recent deployments, last backup, resources, notifications", async () => {
    const slug = await newOrg()
    const viewer = await withRole(slug, "viewer")
    await api.post(`/v1/orgs/${slug}/projects`, { name: "ov" }, { token: suite.admin.token })
    const reply = await api.get(`/v1/orgs/${slug}/projects/ov/overview`, { token: viewer.token })
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({
      project: { name: "ov" },
      serving: null,
      recentDeployments: [],
      lastBackup: null,
      notifications: []
    })
    expect(reply.body.resources.database).toEqual({ declared: false, provisioned: false })
  })

  const projectsOf = (slug: string) => `/v1/orgs/${slug}/projects`
  const projectIn = async (slug: string) => (await suite.newProject(slug)).name
  itChecksRoles(suite, {
    name: "GET projects",
    min: "viewer",
    request: (slug) => ({ method: "GET", path: projectsOf(slug) }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "POST projects",
    min: "member",
    request: (slug) => ({ method: "POST", path: projectsOf(slug), body: { name: unique("p") } }),
    ok: 201
  })
  itChecksRoles(suite, {
    name: "GET project",
    min: "viewer",
    setup: projectIn,
    request: (slug, project) => ({ method: "GET", path: `${projectsOf(slug)}/${project}` }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "GET project overview",
    min: "viewer",
    setup: projectIn,
    request: (slug, project) => ({ method: "GET", path: `${projectsOf(slug)}/${project}/overview` }),
    ok: 200
  })
  // Only the admin, last, succeeds; the refused callers before it leave the project in place.
  itChecksRoles(suite, {
    name: "DELETE project",
    min: "admin",
    setup: projectIn,
    request: (slug, project) => ({
      method: "DELETE",
      path: `${projectsOf(slug)}/${project}`,
      body: { confirm: project }
    }),
    ok: 202
  })

  it("GET a missing project is 404", async () => {
    const slug = await newOrg()
    expect((await api.get(`/v1/orgs/${slug}/projects/missing`, { token: suite.admin.token })).status).toBe(404)
  })

  it("a bad project name is 400", async () => {
    const slug = await newOrg()
    for (const name of ["Bad_Name", "-x", "a".repeat(41), ""]) {
      const reply = await api.post(`/v1/orgs/${slug}/projects`, { name }, { token: suite.admin.token })
      expect(reply.status).toBe(400)
      expect(reply.body.code).toBe("bad_request")
    }
  })

  it("the same name twice in an org is 409 project_name_taken; in another org 409 hostname_taken", async () => {
    const first = await newOrg()
    const second = await newOrg()
    const name = unique("dup")
    expect((await api.post(`/v1/orgs/${first}/projects`, { name }, { token: suite.admin.token })).status).toBe(201)
    const again = await api.post(`/v1/orgs/${first}/projects`, { name }, { token: suite.admin.token })
    expect(again.status).toBe(409)
    expect(again.body.code).toBe("project_name_taken")
    const elsewhere = await api.post(`/v1/orgs/${second}/projects`, { name }, { token: suite.admin.token })
    expect(elsewhere.status).toBe(409)
    expect(elsewhere.body.code).toBe("hostname_taken")
  })

  it("a free org's fourth project is 409 project_limit with details { limit, count, plan }", async () => {
    const slug = await newOrg()
    for (const name of ["one", "two", "three"]) {
      expect(
        (await api.post(`/v1/orgs/${slug}/projects`, { name: `${name}-${slug}` }, { token: suite.admin.token })).status
      ).toBe(201)
    }
    const reply = await api.post(`/v1/orgs/${slug}/projects`, { name: `four-${slug}` }, { token: suite.admin.token })
    expect(reply.status).toBe(409)
    expect(reply.body.code).toBe("project_limit")
    expect(reply.body.details).toEqual({ limit: 3, count: 3, plan: "free" })
  })

  it("20 concurrent creates against the limit of 3 create exactly 3", async () => {
    const slug = await newOrg()
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.post(
          `/v1/orgs/${slug}/projects`,
          { name: `race-${i}-${slug}`.slice(0, 40).replace(/-$/, "") },
          { token: suite.admin.token }
        )
      )
    )
    expect(replies.filter((r) => r.status === 201)).toHaveLength(3)
    expect(replies.filter((r) => r.status === 409).every((r) => r.body.code === "project_limit")).toBe(true)
    expect((await api.get(`/v1/orgs/${slug}/projects`, { token: suite.admin.token })).body.items).toHaveLength(3)
  })

  it("an org holding a project cannot be deleted: 409 org_not_empty with the project in details.holdings", async () => {
    const slug = await newOrg()
    await api.post(`/v1/orgs/${slug}/projects`, { name: `held-${slug}` }, { token: suite.admin.token })
    const reply = await api.delete(`/v1/orgs/${slug}`, { confirm: slug }, { token: suite.admin.token })
    expect(reply.status).toBe(409)
    expect(reply.body.code).toBe("org_not_empty")
    expect(reply.body.details.holdings.projects).toEqual({ count: 1, names: [`held-${slug}`] })
  })

  it("DELETE project: confirm must equal the name (400) and the project stays", async () => {
    const slug = await newOrg()
    await api.post(`/v1/orgs/${slug}/projects`, { name: "keep" }, { token: suite.admin.token })
    expect(
      (await api.delete(`/v1/orgs/${slug}/projects/keep`, { confirm: "other" }, { token: suite.admin.token })).status
    ).toBe(400)
    expect((await api.get(`/v1/orgs/${slug}/projects/keep`, { token: suite.admin.token })).status).toBe(200)
  })

  it("DELETE project is 202 { operationId }; a second delete is 409 op_in_flight; the operation runs to done", async () => {
    const slug = await newOrg()
    const viewer = await withRole(slug, "viewer")
    const name = unique("gone")
    await api.post(`/v1/orgs/${slug}/projects`, { name }, { token: suite.admin.token })
    const started = await api.delete(
      `/v1/orgs/${slug}/projects/${name}`,
      { confirm: name },
      { token: suite.admin.token }
    )
    expect(started.status).toBe(202)
    expect(Object.keys(started.body)).toEqual(["operationId"])
    const again = await api.delete(`/v1/orgs/${slug}/projects/${name}`, { confirm: name }, { token: suite.admin.token })
    expect(again.status).toBe(409)
    expect(again.body.code).toBe("op_in_flight")
    const pending = await api.get(`/v1/orgs/${slug}/operations/${started.body.operationId}`, { token: viewer.token })
    expect(pending.status).toBe(200)
    // decisions.md part 4's operation shape, exactly.
    expect(Object.keys(pending.body).sort()).toEqual(
      ["createdAt", "id", "kind", "phase", "projectId", "terminalCode", "updatedAt"].sort()
    )
    expect(pending.body).toMatchObject({
      id: started.body.operationId,
      kind: "project_delete",
      phase: "routing",
      terminalCode: null
    })
    expect(
      (await api.get(`/v1/orgs/${slug}/operations/${started.body.operationId}`, { token: suite.outsider.token })).status
    ).toBe(404)
    await runOperations()
    const finished = await api.get(`/v1/orgs/${slug}/operations/${started.body.operationId}`, { token: viewer.token })
    expect(finished.body).toMatchObject({ phase: "metadata", terminalCode: "done" })
    expect((await api.get(`/v1/orgs/${slug}/projects/${name}`, { token: suite.admin.token })).status).toBe(404)
    expect((await auditOf(suite.server, slug)).map((e) => e.action)).toContain("project.delete")
    // The default hostname is free again.
    const other = await newOrg()
    expect((await api.post(`/v1/orgs/${other}/projects`, { name }, { token: suite.admin.token })).status).toBe(201)
  })

  it("an operation of another org is 404", async () => {
    const slug = await newOrg()
    const name = unique("op")
    await api.post(`/v1/orgs/${slug}/projects`, { name }, { token: suite.admin.token })
    const started = await api.delete(
      `/v1/orgs/${slug}/projects/${name}`,
      { confirm: name },
      { token: suite.admin.token }
    )
    const other = await newOrg()
    expect(
      (await api.get(`/v1/orgs/${other}/operations/${started.body.operationId}`, { token: suite.admin.token })).status
    ).toBe(404)
  })
})
