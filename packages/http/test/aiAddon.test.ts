import { Ai, Kernel, Secrets } from "@hostplane/core"
import { Effect, Option } from "effect"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { orgIdOf, withPolar } from "./support/polar.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { auditOf, useSuite } from "./support/TestServer.ts"

const freeLimits = {
  maxOutputTokens: 4096,
  maxInputTokens: 32768,
  requestsPerMinute: 20,
  dailySpendMicroCents: 100000000
}

describe.each(backends)("spec 4.10 AI add-on (%s)", (_name, stores) => {
  const { holder, settings, gateway } = withPolar()
  const suite = useSuite(stores, settings, undefined, undefined, { providers: [gateway] })
  const { api, newOrg, newProject } = suite
  const path = (slug: string, project: string) => `/v1/orgs/${slug}/projects/${project}/ai`

  /** The project's key as the node's binding would carry it, opened from its sealed form; none when not granted. */
  const keyOf = (projectId: Kernel.ProjectId) =>
    suite.server.run(
      Effect.gen(function* () {
        const row = yield* (yield* Ai.AiKeyStore).find(projectId)
        if (Option.isNone(row)) return undefined
        const opened = yield* (yield* Secrets.Sealer).open(row.value.sealed, Ai.aiKeyContext(projectId))
        const owner = yield* (yield* Ai.AiKeyStore).projectOfKey(yield* (yield* Kernel.Tokens).hash(opened))
        return { key: opened, owner: Option.getOrUndefined(owner), hash: row.value.keyHash }
      }).pipe(Effect.orDie)
    )

  itChecksRoles(suite, {
    name: "GET ai",
    min: "viewer",
    setup: (slug) => newProject(slug),
    request: (slug, project) => ({ method: "GET", path: path(slug, project.name) }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "POST ai",
    min: "member",
    setup: (slug) => newProject(slug),
    request: (slug, project) => ({ method: "POST", path: path(slug, project.name) }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "DELETE ai",
    min: "admin",
    setup: (slug) => newProject(slug),
    request: (slug, project) => ({ method: "DELETE", path: path(slug, project.name) }),
    ok: 204
  })

  it("status before a grant: granted false, the plan's limits filled, the org's balance and 24h spend", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const reply = await api.get(path(slug, project.name), { token: suite.admin.token })
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({ granted: false, limits: freeLimits, balanceMicroCents: 0, spentMicroCents24h: 0 })
  })

  it("grant issues a per-project key (audit ai.grant, once); a repeat is the same key; revoke deletes it (ai.revoke)", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const granted = await api.post(path(slug, project.name), undefined, { token: suite.admin.token })
    expect(granted.body).toEqual({ granted: true, limits: freeLimits, balanceMicroCents: 0, spentMicroCents24h: 0 })
    const first = await keyOf(project.id)
    expect(first?.key).toMatch(/^hp_ai_[A-Za-z0-9_-]{43}$/)
    expect(first?.owner).toBe(project.id)
    expect((await api.post(path(slug, project.name), undefined, { token: suite.admin.token })).status).toBe(200)
    expect((await keyOf(project.id))?.key).toBe(first?.key)
    const detail = await api.get(`/v1/orgs/${slug}/projects/${project.name}`, { token: suite.admin.token })
    expect(detail.body.addons.ai).toBe(true)
    expect((await api.delete(path(slug, project.name), undefined, { token: suite.admin.token })).status).toBe(204)
    expect((await api.delete(path(slug, project.name), undefined, { token: suite.admin.token })).status).toBe(204)
    expect(await keyOf(project.id)).toBeUndefined()
    expect((await api.get(path(slug, project.name), { token: suite.admin.token })).body.granted).toBe(false)
    // Rotated on revoke: the next grant issues a new key; the old one no longer names a project.
    await api.post(path(slug, project.name), undefined, { token: suite.admin.token })
    const second = await keyOf(project.id)
    expect(second?.key).not.toBe(first?.key)
    const stale = await suite.server.run(
      Effect.flatMap(Effect.service(Ai.AiKeyStore), (keys) => keys.projectOfKey(first!.hash))
    )
    expect(Option.isNone(stale)).toBe(true)
    const audit = (await auditOf(suite.server, slug)).filter((event) => event.action.startsWith("ai."))
    expect(audit.map((event) => [event.action, event.target, event.data])).toEqual([
      ["ai.grant", project.id, { project: project.name }],
      ["ai.revoke", project.id, { project: project.name }],
      ["ai.grant", project.id, { project: project.name }]
    ])
    // The key never appears in an answer or an audit row.
    expect(JSON.stringify({ granted: granted.body, audit })).not.toContain(second!.key)
  })

  it("a project of another org named under this org, or a missing one, is 404 for GET, POST and DELETE, whatever the role", async () => {
    const slug = await newOrg()
    const other = await newOrg()
    const foreign = await newProject(other)
    await newProject(slug)
    const viewer = await suite.withRole(slug, "viewer")
    const member = await suite.withRole(slug, "member")
    const calls = (token: string, name: string) =>
      Promise.all([
        api.get(path(slug, name), { token }),
        api.post(path(slug, name), undefined, { token }),
        api.delete(path(slug, name), undefined, { token })
      ])
    for (const [who, token, name] of [
      ["admin of both orgs", suite.admin.token, foreign.name],
      ["member", member.token, foreign.name],
      ["viewer", viewer.token, foreign.name],
      ["admin", suite.admin.token, "missing"]
    ] as const) {
      expect({ who, name, replies: (await calls(token, name)).map((r) => [r.status, r.body?.code]) }).toEqual({
        who,
        name,
        replies: [
          [404, "not_found"],
          [404, "not_found"],
          [404, "not_found"]
        ]
      })
    }
    // Nothing was granted to the other org's project, and neither org has an ai.* audit row.
    expect(await keyOf(foreign.id)).toBeUndefined()
    for (const org of [slug, other]) {
      expect((await auditOf(suite.server, org)).filter((event) => event.action.startsWith("ai."))).toEqual([])
    }
  })

  it("the balance belongs to the org: status shows it, revoke keeps it; a pro org shows pro limits at once", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const orgId = await orgIdOf(suite.server, slug)
    const hook = `${suite.server.url}/v1/hooks/billing`
    await holder.polar.deliver(hook, {
      type: "order.paid",
      data: { id: "o", customer: { external_id: orgId }, metadata: { kind: "ai_credit", microCents: "500000000" } }
    })
    await api.post(path(slug, project.name), undefined, { token: suite.admin.token })
    await api.delete(path(slug, project.name), undefined, { token: suite.admin.token })
    const after = await api.get(path(slug, project.name), { token: suite.admin.token })
    expect(after.body.balanceMicroCents).toBe(500_000_000)
    await holder.polar.deliver(hook, { type: "subscription.active", data: { ...holder.polar.subscribe(orgId) } })
    const pro = await api.get(path(slug, project.name), { token: suite.admin.token })
    expect(pro.body.limits).toEqual({
      maxOutputTokens: 0,
      maxInputTokens: 0,
      requestsPerMinute: 600,
      dailySpendMicroCents: 10000000000
    })
  })
})
