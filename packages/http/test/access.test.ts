import { Access, Jobs, Kernel, Orgs, Projects, services } from "@hostplane/core"
import { Effect, Option } from "effect"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { hostileBodies, sendRaw } from "./support/HostileBodies.ts"
import { auditOf, logCapture, type Reply, unique, useSuite } from "./support/TestServer.ts"

describe.each(backends)("spec 4.11 access policy (%s)", (_name, stores) => {
  // Every log line the server writes while handling requests, to check that no password or secret reaches a log.
  const { lines: logs, layer: captureLogs } = logCapture()
  const suite = useSuite(stores, {}, captureLogs)
  const { api, newOrg, newProject, withRole } = suite

  const accessOf = (slug: string, project: string) => `/v1/orgs/${slug}/projects/${project}/access`
  /** Runs a core call the edge would make, on the server's own stores. */
  const edge = <A>(f: (access: Access.AccessPolicies["Service"]) => Effect.Effect<A>) =>
    suite.server.run(Effect.flatMap(Effect.service(Access.AccessPolicies), f).pipe(Effect.provide(services)))
  const storedPolicy = (projectId: Kernel.ProjectId) =>
    suite.server.run(Effect.flatMap(Effect.service(Access.AccessStore), (store) => store.findPolicy(projectId)))
  const everything = async (replies: ReadonlyArray<Reply>) =>
    JSON.stringify({
      replies: replies.map((reply) => reply.body),
      audit: await suite.server.run(Effect.flatMap(Effect.service(Kernel.AuditLog), (audit) => audit.list({}))),
      logs
    })

  it("GET access: a project without a policy is { mode: public, hasPassword: false, hasBypass: false } for a viewer", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const viewer = await withRole(slug, "viewer")
    const reply = await api.get(accessOf(slug, project.name), { token: viewer.token })
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({ mode: "public", hasPassword: false, hasBypass: false })
    expect(await edge((access) => access.policyOf(project.id))).toEqual(Access.defaultAccessPolicy)
    expect(await edge((access) => access.checkPassword(project.id, "whatever1"))).toBe(false)
  })

  it("PUT access: mode password with no password ever set is 400; with one 200; omitting it keeps it; audit access.set", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const password = `pw-${unique("p")}-long`
    const refused = await api.put(accessOf(slug, project.name), { mode: "password" }, { token: suite.admin.token })
    expect(refused.status).toBe(400)
    expect(refused.body.code).toBe("bad_request")
    const replies = [
      await api.put(accessOf(slug, project.name), { mode: "password", password }, { token: suite.admin.token }),
      await api.put(accessOf(slug, project.name), { mode: "org" }, { token: suite.admin.token }),
      await api.put(accessOf(slug, project.name), { mode: "password" }, { token: suite.admin.token }),
      await api.get(accessOf(slug, project.name), { token: suite.admin.token })
    ]
    expect(replies.map((reply) => [reply.status, reply.body])).toEqual([
      [200, { mode: "password", hasPassword: true, hasBypass: false }],
      [200, { mode: "org", hasPassword: true, hasBypass: false }],
      [200, { mode: "password", hasPassword: true, hasBypass: false }],
      [200, { mode: "password", hasPassword: true, hasBypass: false }]
    ])
    const events = (await auditOf(suite.server, slug)).filter((event) => event.action === "access.set")
    expect(events.map((event) => [event.actorId, event.target, event.data])).toEqual([
      [suite.admin.userId, project.id, { mode: "password", passwordChanged: true }],
      [suite.admin.userId, project.id, { mode: "org", passwordChanged: false }],
      [suite.admin.userId, project.id, { mode: "password", passwordChanged: false }]
    ])
    const stored = Option.getOrThrow(await storedPolicy(project.id))
    expect(stored.passwordHash).toMatch(/^\$scrypt\$ln=\d+,r=\d+,p=\d+\$/)
    expect(JSON.stringify(stored)).not.toContain(password)
    expect(await everything([...replies, refused])).not.toContain(password)
    expect(await edge((access) => access.checkPassword(project.id, password))).toBe(true)
    for (const wrong of [`${password}x`, `${password} `, "short"]) {
      expect(await edge((access) => access.checkPassword(project.id, wrong)), wrong).toBe(false)
    }
    // The password is kept, but only mode password asks for it.
    await api.put(accessOf(slug, project.name), { mode: "org" }, { token: suite.admin.token })
    expect(await edge((access) => access.checkPassword(project.id, password))).toBe(false)
  })

  it("PUT access: a new password replaces the old; a bad mode or a password outside 8..200 characters is 400", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    await api.put(
      accessOf(slug, project.name),
      { mode: "password", password: "first-password" },
      { token: suite.admin.token }
    )
    await api.put(
      accessOf(slug, project.name),
      { mode: "password", password: "second-password" },
      { token: suite.admin.token }
    )
    expect(await edge((access) => access.checkPassword(project.id, "first-password"))).toBe(false)
    expect(await edge((access) => access.checkPassword(project.id, "second-password"))).toBe(true)
    for (const body of [
      { mode: "private" },
      {},
      { mode: "password", password: "short" },
      { mode: "org", password: "p".repeat(201) }
    ]) {
      const reply = await api.put(accessOf(slug, project.name), body, { token: suite.admin.token })
      expect(reply.status).toBe(400)
      expect(reply.body.code).toBe("bad_request")
    }
    expect(JSON.stringify(logs)).not.toContain("second-password")
  })

  it("PUT on a project being deleted: a bad body 400 before 409 op_in_flight (decisions.md part 12); nothing set", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const remove = await api.delete(
      `/v1/orgs/${slug}/projects/${project.name}`,
      { confirm: project.name },
      { token: suite.admin.token }
    )
    expect(remove.status).toBe(202)
    const audited = (await auditOf(suite.server, slug)).length
    const answers = [
      await api.put(
        accessOf(slug, project.name),
        { mode: "password", password: "short" },
        { token: suite.admin.token }
      ),
      await api.put(accessOf(slug, project.name), { mode: "private" }, { token: suite.admin.token }),
      await api.put(
        accessOf(slug, project.name),
        { mode: "password", password: "long-enough-password" },
        { token: suite.admin.token }
      ),
      await api.put(accessOf(slug, project.name), { mode: "org" }, { token: suite.admin.token })
    ]
    expect(answers.map((reply) => [reply.status, reply.body.code])).toEqual([
      [400, "bad_request"],
      [400, "bad_request"],
      [409, "op_in_flight"],
      [409, "op_in_flight"]
    ])
    expect((await auditOf(suite.server, slug)).length).toBe(audited)
  })

  it("POST bypass answers { secret } once; each call invalidates the previous; only its SHA-256 is stored", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const first = await api.post(`${accessOf(slug, project.name)}/bypass`, undefined, { token: suite.admin.token })
    expect(first.status).toBe(200)
    expect(first.headers.get("cache-control")).toBe("no-store")
    expect(Object.keys(first.body)).toEqual(["secret"])
    expect(first.body.secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const second = await api.post(`${accessOf(slug, project.name)}/bypass`, undefined, { token: suite.admin.token })
    expect(second.body.secret).not.toBe(first.body.secret)
    expect(await edge((access) => access.checkBypass(project.id, first.body.secret))).toBe(false)
    expect(await edge((access) => access.checkBypass(project.id, second.body.secret))).toBe(true)
    const policy = await api.get(accessOf(slug, project.name), { token: suite.admin.token })
    expect(policy.body).toEqual({ mode: "public", hasPassword: false, hasBypass: true })
    expect(JSON.stringify(policy.body)).not.toContain(second.body.secret)
    const stored = Option.getOrThrow(await storedPolicy(project.id))
    const digest = await suite.server.run(
      Effect.flatMap(Effect.service(Kernel.Tokens), (tokens) => tokens.hash(second.body.secret)).pipe(
        Effect.provide(Kernel.Tokens.layer)
      )
    )
    expect(stored.bypassHash).toBe(digest)
    const events = (await auditOf(suite.server, slug)).filter((event) => event.action.startsWith("access."))
    expect(events.map((event) => [event.action, event.target, event.data])).toEqual([
      ["access.bypass.new", project.id, {}],
      ["access.bypass.new", project.id, {}]
    ])
    expect(await edge((access) => access.checkBypass(project.id, ""))).toBe(false)
    const leaks = await everything([policy])
    expect(leaks).not.toContain(first.body.secret)
    expect(leaks).not.toContain(second.body.secret)
  })

  it("DELETE bypass is 204 even when there is none; the policy is otherwise unchanged; audit access.bypass.revoke", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    await api.put(accessOf(slug, project.name), { mode: "org" }, { token: suite.admin.token })
    const { body } = await api.post(`${accessOf(slug, project.name)}/bypass`, undefined, { token: suite.admin.token })
    const revoked = await api.delete(`${accessOf(slug, project.name)}/bypass`, undefined, { token: suite.admin.token })
    expect(revoked.status).toBe(204)
    expect(revoked.body).toBe("")
    expect(
      (await api.delete(`${accessOf(slug, project.name)}/bypass`, undefined, { token: suite.admin.token })).status
    ).toBe(204)
    expect(await edge((access) => access.checkBypass(project.id, body.secret))).toBe(false)
    expect((await api.get(accessOf(slug, project.name), { token: suite.admin.token })).body).toEqual({
      mode: "org",
      hasPassword: false,
      hasBypass: false
    })
    const fresh = await newProject(slug)
    expect(
      (await api.delete(`${accessOf(slug, fresh.name)}/bypass`, undefined, { token: suite.admin.token })).status
    ).toBe(204)
    expect((await api.get(accessOf(slug, fresh.name), { token: suite.admin.token })).body.mode).toBe("public")
    const events = (await auditOf(suite.server, slug)).filter((event) => event.action === "access.bypass.revoke")
    expect(events.map((event) => [event.target, event.data])).toEqual([
      [project.id, { revoked: true }],
      [project.id, { revoked: false }],
      [fresh.id, { revoked: false }]
    ])
  })

  const projectIn = async (slug: string) => (await newProject(slug)).name
  itChecksRoles(suite, {
    name: "GET access",
    min: "viewer",
    setup: projectIn,
    request: (slug, project) => ({ method: "GET", path: accessOf(slug, project) }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "PUT access",
    min: "admin",
    setup: projectIn,
    request: (slug, project) => ({ method: "PUT", path: accessOf(slug, project), body: { mode: "org" } }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "POST access bypass",
    min: "admin",
    setup: projectIn,
    request: (slug, project) => ({ method: "POST", path: `${accessOf(slug, project)}/bypass` })
  })
  itChecksRoles(suite, {
    name: "DELETE access bypass",
    min: "admin",
    setup: projectIn,
    request: (slug, project) => ({ method: "DELETE", path: `${accessOf(slug, project)}/bypass` }),
    ok: 204
  })

  it("a foreign or missing project is 404 for GET, PUT and the bypass, whatever the caller's role", async () => {
    const slug = await newOrg()
    const other = await newOrg()
    const foreign = await newProject(other)
    const viewer = await withRole(slug, "viewer")
    const calls = (token: string, org: string, name: string) =>
      Promise.all([
        api.get(accessOf(org, name), { token }),
        api.put(accessOf(org, name), { mode: "org" }, { token }),
        api.post(`${accessOf(org, name)}/bypass`, undefined, { token }),
        api.delete(`${accessOf(org, name)}/bypass`, undefined, { token })
      ])
    for (const [token, org, name] of [
      [suite.admin.token, slug, foreign.name],
      [viewer.token, slug, foreign.name],
      [suite.admin.token, slug, "missing"]
    ] as const) {
      expect((await calls(token, org, name)).map((r) => [r.status, r.body.code])).toEqual([
        [404, "not_found"],
        [404, "not_found"],
        [404, "not_found"],
        [404, "not_found"]
      ])
    }
  })

  it("hostile bodies on PUT access and authorize (malformed, not UTF-8, NUL, lone surrogate, array, 3 MiB) are 400 or 413, and change nothing", async () => {
    const slug = await suite.newOrg()
    const project = await suite.newProject(slug)
    const writes = [
      ["PUT", accessOf(slug, project.name), JSON.stringify({ mode: "password", password: "correct horse" })],
      ["POST", "/v1/access/authorize", JSON.stringify({ to: project.hostname, next: "/" })]
    ] as const
    for (const [method, path, valid] of writes) {
      for (const [what, body, status, code] of hostileBodies(valid)) {
        const reply = await sendRaw(`${suite.server.url}${path}`, method, suite.admin.token, body)
        expect({ path, what, status: reply.status, code: reply.code }).toEqual({ path, what, status, code })
      }
    }
    const policy = await api.get(accessOf(slug, project.name), { token: suite.admin.token })
    expect(policy.body).toEqual({ mode: "public", hasPassword: false, hasBypass: false })
    expect((await auditOf(suite.server, slug)).filter((event) => event.action.startsWith("access."))).toEqual([])
  })

  it("POST /v1/access/authorize answers https://<to>/__service/access/callback?code=<code>&next=<path>", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const viewer = await withRole(slug, "viewer")
    const next = "/docs/a%20b?x=1&y=%C3%A9&z=/#top"
    const reply = await api.post(
      "/v1/access/authorize",
      { to: project.hostname.toUpperCase(), next },
      { token: viewer.token }
    )
    expect(reply.status).toBe(200)
    expect(reply.headers.get("cache-control")).toBe("no-store")
    expect(Object.keys(reply.body)).toEqual(["url"])
    const url = new URL(reply.body.url)
    expect(`${url.protocol}//${url.host}${url.pathname}`).toBe(`https://${project.hostname}/__service/access/callback`)
    expect([...url.searchParams.keys()]).toEqual(["code", "next"])
    expect(url.searchParams.get("next")).toBe(next)
    expect(reply.body.url.endsWith(`&next=${encodeURIComponent(next)}`)).toBe(true)
    const code = url.searchParams.get("code") ?? ""
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const grant = await edge((access) => access.exchangeCode(project.hostname, code))
    const orgId = await suite.server.run(
      Effect.map(
        Effect.flatMap(Orgs.OrgStore, (store) => store.findBySlug(slug)),
        (org) => Option.getOrThrow(org).id
      )
    )
    expect(Option.getOrThrow(grant)).toEqual({ userId: viewer.userId, projectId: project.id, orgId, role: "viewer" })
    for (const spent of [code, "made-up", ""]) {
      expect(Option.isNone(await edge((access) => access.exchangeCode(project.hostname, spent))), spent).toBe(true)
    }
    expect(JSON.stringify(logs)).not.toContain(code)
    // The host is canonical whatever its case, with or without the root's trailing dot.
    const dotted = await api.post(
      "/v1/access/authorize",
      { to: `${project.hostname.toUpperCase()}.`, next: "/" },
      { token: viewer.token }
    )
    expect(dotted.status).toBe(200)
    expect(new URL(dotted.body.url).host).toBe(project.hostname)
  })

  it("a code of a member who left the org before the exchange is refused", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const member = await withRole(slug, "member")
    const reply = await api.post("/v1/access/authorize", { to: project.hostname, next: "/" }, { token: member.token })
    expect(reply.status).toBe(200)
    const code = new URL(reply.body.url).searchParams.get("code") ?? ""
    const removed = await api.delete(`/v1/orgs/${slug}/members/${member.userId}`, undefined, {
      token: suite.admin.token
    })
    expect(removed.status).toBe(204)
    expect(Option.isNone(await edge((access) => access.exchangeCode(project.hostname, code)))).toBe(true)
  })

  it("authorize: an unknown host is 404; a next that is not a same-site path is 400; no org role is 403; no login 401", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    for (const to of [
      `nope-${unique("x")}.apps.localhost`,
      "example.com",
      "",
      `${project.hostname}/path`,
      `${project.hostname}:443`
    ]) {
      const reply = await api.post("/v1/access/authorize", { to, next: "/" }, { token: suite.admin.token })
      expect(reply.status, to).toBe(404)
      expect(reply.body.code).toBe("not_found")
    }
    for (const next of [
      "//evil.example/",
      "https://evil.example/",
      "/\\evil.example",
      "docs",
      "",
      "/%2F%2Fevil",
      "/a\nb"
    ]) {
      const reply = await api.post("/v1/access/authorize", { to: project.hostname, next }, { token: suite.admin.token })
      expect(reply.status, next).toBe(400)
      expect(reply.body.code).toBe("bad_request")
    }
    const forbidden = await api.post(
      "/v1/access/authorize",
      { to: project.hostname, next: "/" },
      { token: suite.outsider.token }
    )
    expect(forbidden.status).toBe(403)
    expect(forbidden.body.code).toBe("forbidden")
    expect((await api.post("/v1/access/authorize", { to: project.hostname, next: "/" })).status).toBe(401)
  })

  it("authorize: a custom hostname still pending_dns is not a known host (404)", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const custom = `www.${unique("pending")}.example.com`
    const added = await api.post(
      `/v1/orgs/${slug}/projects/${project.name}/hostnames`,
      { name: custom },
      { token: suite.admin.token }
    )
    expect(added.status).toBe(200)
    expect(added.body.status).toBe("pending_dns")
    const reply = await api.post("/v1/access/authorize", { to: custom, next: "/" }, { token: suite.admin.token })
    expect(reply.status).toBe(404)
    expect(reply.body.code).toBe("not_found")
  })

  it("a deleted project's hostname is no longer a known host, and its policy is gone", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    await api.put(accessOf(slug, project.name), { mode: "org" }, { token: suite.admin.token })
    const reply = await api.delete(
      `/v1/orgs/${slug}/projects/${project.name}`,
      { confirm: project.name },
      { token: suite.admin.token }
    )
    expect(reply.status).toBe(202)
    await suite.server.run(Jobs.JobRunner.runOnce([Projects.projectDeleteHandler]))
    const after = await api.post(
      "/v1/access/authorize",
      { to: project.hostname, next: "/" },
      { token: suite.admin.token }
    )
    expect(after.status).toBe(404)
    expect(Option.isNone(await storedPolicy(project.id))).toBe(true)
  })
})
