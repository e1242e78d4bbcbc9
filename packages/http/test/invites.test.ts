import { Jobs, Kernel, Mail, Orgs } from "@hostplane/core"
import { Duration, Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { auditOf, client, startTestServer, type TestServer, unique, useSuite } from "./support/TestServer.ts"

describe.each(backends)("spec 4.2 invites (%s)", (_name, stores) => {
  const suite = useSuite(stores)
  const { api } = suite
  const sent: Array<Mail.MailMessage> = []
  const newOrg = () => suite.newOrg("Crew")

  /** The queued invitation mail of an invite, read from the outbox. */
  const mailOf = (slug: string, inviteId: Kernel.InviteId) =>
    suite.server.run(
      Effect.gen(function* () {
        const store = yield* Orgs.OrgStore
        const outbox = yield* Mail.MailOutbox
        const org = Option.getOrThrow(yield* store.findBySlug(slug))
        const invite = Option.getOrThrow(yield* store.findInvite(org.id, inviteId))
        return Option.getOrThrow(yield* outbox.get(invite.mailId!))
      })
    )
  const tokenOf = async (slug: string, inviteId: Kernel.InviteId) => {
    const mail = await mailOf(slug, inviteId)
    const match = /http:\/\/localhost:8080\/invites\/([A-Za-z0-9_-]{43})/.exec(mail.text)
    expect(match).not.toBeNull()
    return match![1]!
  }
  const runMailer = () =>
    suite.server.run(
      Jobs.JobRunner.runOnce([Mail.sendMailHandler()]).pipe(
        Effect.provideService(Mail.MailTransport, {
          send: (message) => Effect.sync(() => void sent.push(message)),
          sendRaw: (message) => Effect.succeed(message.id)
        })
      )
    )
  const invite = async (slug: string, email: string, role: "viewer" | "member" | "admin" = "member") => {
    const reply = await api.post(`/v1/orgs/${slug}/invites`, { email, role }, { token: suite.admin.token })
    expect([200, 201]).toContain(reply.status)
    return { reply, token: await tokenOf(slug, reply.body.inviteId) }
  }
  const orgsOf = async (session: { token: string }) =>
    (await api.get("/v1/orgs", { token: session.token })).body.items as Array<{ slug: string; role: string }>
  const week = 7 * 24 * 60 * 60 * 1000

  it("POST invites is 201 Invite without the token, queues the email and writes member.invite", async () => {
    const slug = await newOrg()
    const email = `${unique("dana")}@example.test`
    const reply = await api.post(`/v1/orgs/${slug}/invites`, { email, role: "member" }, { token: suite.admin.token })
    expect(reply.status).toBe(201)
    expect(Object.keys(reply.body).sort()).toEqual([
      "createdAt",
      "email",
      "expiresAt",
      "inviteId",
      "role",
      "sentAt",
      "state"
    ])
    expect(reply.body).toMatchObject({ email, role: "member", state: "pending", sentAt: null })
    expect(reply.body.inviteId).toMatch(/^inv_/)
    expect(Date.parse(reply.body.expiresAt) - Date.parse(reply.body.createdAt)).toBe(week)
    const token = await tokenOf(slug, reply.body.inviteId)
    expect(Buffer.from(token, "base64url").length).toBe(32)
    expect(JSON.stringify(reply.body)).not.toContain(token)
    const mail = await mailOf(slug, reply.body.inviteId)
    expect(mail.to).toBe(email)
    expect(mail.state).toBe("queued")
    expect(mail.subject).toContain("Crew")
    expect((await api.get(`/v1/orgs/${slug}/invites`, { token: suite.admin.token })).body.items).toEqual([reply.body])
    const event = (await auditOf(suite.server, slug)).find((e) => e.action === "member.invite")
    expect(event).toMatchObject({ actorId: suite.admin.userId, target: reply.body.inviteId })
    expect(JSON.stringify(event)).not.toContain(email)
    expect(JSON.stringify(event)).not.toContain(token)
  })

  it("the email is sent later by the runner, and then sentAt is set", async () => {
    const slug = await newOrg()
    const email = `${unique("sent")}@example.test`
    const { reply } = await invite(slug, email)
    const listed = async () =>
      (await api.get(`/v1/orgs/${slug}/invites`, { token: suite.admin.token })).body.items.find(
        (i: { inviteId: string }) => i.inviteId === reply.body.inviteId
      )
    expect((await listed()).sentAt).toBeNull()
    const before = new Date().toISOString()
    await runMailer()
    const after = new Date().toISOString()
    expect(sent.filter((m) => m.to === email)).toHaveLength(1)
    const { sentAt } = await listed()
    expect(sentAt >= before && sentAt <= after, `${before} <= ${sentAt} <= ${after}`).toBe(true)
  })

  it("a repeat for the same address updates the same row (200, new token, new role)", async () => {
    const slug = await newOrg()
    const email = `${unique("rep")}@example.test`
    const first = await invite(slug, email, "viewer")
    const firstMail = await mailOf(slug, first.reply.body.inviteId)
    const again = await api.post(
      `/v1/orgs/${slug}/invites`,
      { email: email.toUpperCase(), role: "admin" },
      { token: suite.admin.token }
    )
    expect(again.status).toBe(200)
    expect(again.body.inviteId).toBe(first.reply.body.inviteId)
    expect(again.body.role).toBe("admin")
    expect(again.body.createdAt).toBe(first.reply.body.createdAt)
    expect(again.body.expiresAt >= first.reply.body.expiresAt).toBe(true)
    const second = await tokenOf(slug, again.body.inviteId)
    expect(second).not.toBe(first.token)
    expect((await api.get(`/v1/invites/${first.token}`)).status).toBe(404)
    expect((await api.get(`/v1/invites/${second}`)).body.role).toBe("admin")
    expect(
      (await suite.server.run(Effect.flatMap(Mail.MailOutbox, (outbox) => outbox.get(firstMail.id)))).pipe(
        Option.getOrThrow
      ).state
    ).toBe("cancelled")
    const list = await api.get(`/v1/orgs/${slug}/invites`, { token: suite.admin.token })
    expect(list.body.items).toHaveLength(1)
    const audit = (await auditOf(suite.server, slug)).filter((e) => e.action === "member.invite")
    expect(audit.map((e) => [e.target, e.data])).toEqual([
      [first.reply.body.inviteId, { role: "viewer", renewed: false }],
      [first.reply.body.inviteId, { role: "admin", renewed: true }]
    ])
  })

  it("inviting the address of an existing member, in any case, is 409 already_member", async () => {
    const slug = await newOrg()
    const local = unique("mem")
    const email = `${local}@example.test`
    const user = await api.login(unique("mem"), { email })
    await api.post(
      `/v1/orgs/${slug}/members`,
      { provider: "dev", subject: user.subject, role: "member" },
      { token: suite.admin.token }
    )
    for (const address of [email, `${local.toUpperCase()}@example.test`]) {
      const reply = await api.post(
        `/v1/orgs/${slug}/invites`,
        { email: address, role: "member" },
        { token: suite.admin.token }
      )
      expect(reply.status, address).toBe(409)
      expect(reply.body.code, address).toBe("already_member")
    }
  })

  it("more than 50 pending invites is 409 too_many_invites", async () => {
    const slug = await newOrg()
    for (let i = 0; i < 50; i++) {
      const reply = await api.post(
        `/v1/orgs/${slug}/invites`,
        { email: `p${i}@example.test`, role: "viewer" },
        { token: suite.admin.token }
      )
      expect(reply.status).toBe(201)
    }
    const reply = await api.post(
      `/v1/orgs/${slug}/invites`,
      { email: "p50@example.test", role: "viewer" },
      { token: suite.admin.token }
    )
    expect(reply.status).toBe(409)
    expect(reply.body.code).toBe("too_many_invites")
    expect(reply.body.details).toEqual({ limit: 50 })
    const renew = await api.post(
      `/v1/orgs/${slug}/invites`,
      { email: "p0@example.test", role: "member" },
      { token: suite.admin.token }
    )
    expect(renew.status).toBe(200)
    expect((await api.get(`/v1/orgs/${slug}/invites`, { token: suite.admin.token })).body.items).toHaveLength(50)
  })

  const invitesOf = (slug: string) => `/v1/orgs/${slug}/invites`
  itChecksRoles(suite, {
    name: "GET invites",
    min: "admin",
    request: (slug) => ({ method: "GET", path: invitesOf(slug) }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "POST invites",
    min: "admin",
    request: (slug) => ({
      method: "POST",
      path: invitesOf(slug),
      body: { email: `${unique("x")}@example.test`, role: "member" }
    }),
    ok: 201
  })
  itChecksRoles(suite, {
    name: "DELETE invite",
    min: "admin",
    request: async (slug) => {
      const { reply } = await invite(slug, `${unique("d")}@example.test`)
      return { method: "DELETE", path: `${invitesOf(slug)}/${reply.body.inviteId}` }
    },
    ok: 204
  })

  it("invites: bad email or role 400", async () => {
    const slug = await newOrg()
    const body = { email: "x@example.test", role: "member" }
    expect(
      (await api.post(`/v1/orgs/${slug}/invites`, { ...body, email: "not-an-email" }, { token: suite.admin.token }))
        .status
    ).toBe(400)
    expect(
      (await api.post(`/v1/orgs/${slug}/invites`, { ...body, role: "boss" }, { token: suite.admin.token })).status
    ).toBe(400)
  })

  it("GET /v1/invites/{token} needs no login and previews the invite; unknown token 404", async () => {
    const slug = await newOrg()
    const { reply: created, token } = await invite(slug, `${unique("view")}@example.test`, "viewer")
    const reply = await api.get(`/v1/invites/${token}`)
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({
      orgName: "Crew",
      orgSlug: slug,
      role: "viewer",
      state: "pending",
      expiresAt: created.body.expiresAt
    })
    const unknown = await api.get(`/v1/invites/${"x".repeat(43)}`)
    expect(unknown.status).toBe(404)
    expect(unknown.body.code).toBe("not_found")
  })

  it("accept needs a login (401) and makes the caller a member with the invite role; member.accept", async () => {
    const slug = await newOrg()
    const { reply: created, token } = await invite(slug, `${unique("acc")}@example.test`, "viewer")
    expect((await api.post(`/v1/invites/${token}/accept`)).status).toBe(401)
    const joiner = await api.login(unique("joiner"))
    const reply = await api.post(`/v1/invites/${token}/accept`, undefined, { token: joiner.token })
    expect(reply.status).toBe(200)
    expect(reply.body.alreadyMember).toBe(false)
    expect(reply.body.org).toMatchObject({ slug, role: "viewer", projectLimit: 3 })
    expect(await orgsOf(joiner)).toContainEqual(expect.objectContaining({ slug, role: "viewer" }))
    const audit = (await auditOf(suite.server, slug)).filter((e) => e.action === "member.accept")
    expect(audit.map((e) => [e.actorId, e.target, e.data])).toEqual([
      [joiner.userId, created.body.inviteId, { role: "viewer", alreadyMember: false }]
    ])
    expect((await api.get(`/v1/invites/${token}`)).body.state).toBe("accepted")
    const list = await api.get(`/v1/orgs/${slug}/invites`, { token: suite.admin.token })
    expect(list.body.items).toHaveLength(0)
  })

  it("accepting an unknown token is 404 not_found", async () => {
    const reply = await api.post(`/v1/invites/${"y".repeat(43)}/accept`, undefined, { token: suite.outsider.token })
    expect(reply.status).toBe(404)
    expect(reply.body.code).toBe("not_found")
  })

  it("accepting again is 409 invite_used", async () => {
    const slug = await newOrg()
    const { token } = await invite(slug, `${unique("used")}@example.test`)
    const joiner = await api.login(unique("j"))
    expect((await api.post(`/v1/invites/${token}/accept`, undefined, { token: joiner.token })).status).toBe(200)
    const other = await api.login(unique("k"))
    const reply = await api.post(`/v1/invites/${token}/accept`, undefined, { token: other.token })
    expect(reply.status).toBe(409)
    expect(reply.body.code).toBe("invite_used")
    const again = await api.post(`/v1/invites/${token}/accept`, undefined, { token: joiner.token })
    expect(again.status).toBe(409)
    expect(again.body.code).toBe("invite_used")
    expect((await orgsOf(other)).map((o) => o.slug)).not.toContain(slug)
  })

  it("an existing member accepting keeps their role and gets alreadyMember true", async () => {
    const slug = await newOrg()
    const { token } = await invite(slug, `${unique("already")}@example.test`, "viewer")
    const reply = await api.post(`/v1/invites/${token}/accept`, undefined, { token: suite.admin.token })
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({ alreadyMember: true, org: { slug, role: "admin" } })
    const member = await suite.withRole(slug, "member")
    const promoting = await invite(slug, `${unique("promote")}@example.test`, "admin")
    const kept = await api.post(`/v1/invites/${promoting.token}/accept`, undefined, { token: member.token })
    expect(kept.status).toBe(200)
    expect(kept.body).toMatchObject({ alreadyMember: true, org: { slug, role: "member" } })
    expect(await orgsOf(member)).toContainEqual(expect.objectContaining({ slug, role: "member" }))
  })

  it("an existing member's accept still uses the invite (spec part 3): state accepted, unlisted, member.accept, then 409 invite_used", async () => {
    const slug = await newOrg()
    const member = await suite.withRole(slug, "member")
    const { reply: created, token } = await invite(slug, `${unique("used")}@example.test`, "admin")
    const accepted = await api.post(`/v1/invites/${token}/accept`, undefined, { token: member.token })
    expect(accepted.body).toMatchObject({ alreadyMember: true, org: { slug, role: "member" } })
    expect((await api.get(`/v1/invites/${token}`)).body.state).toBe("accepted")
    expect((await api.get(`/v1/orgs/${slug}/invites`, { token: suite.admin.token })).body.items).toEqual([])
    const audit = (await auditOf(suite.server, slug)).filter((e) => e.action === "member.accept")
    expect(audit.map((e) => [e.actorId, e.target, e.data])).toEqual([
      [member.userId, created.body.inviteId, { role: "member", alreadyMember: true }]
    ])
    const joiner = await api.login(unique("second"))
    for (const session of [member, joiner]) {
      const again = await api.post(`/v1/invites/${token}/accept`, undefined, { token: session.token })
      expect({ status: again.status, code: again.body.code }).toEqual({ status: 409, code: "invite_used" })
    }
    expect((await orgsOf(joiner)).map((o) => o.slug)).not.toContain(slug)
    expect(await orgsOf(member)).toContainEqual(expect.objectContaining({ slug, role: "member" }))
  })

  it("DELETE invite revokes it (204, member.uninvite), drops the unsent email; accept is then 409 invite_revoked", async () => {
    const slug = await newOrg()
    const email = `${unique("rev")}@example.test`
    const { reply, token } = await invite(slug, email)
    const revoke = await api.delete(`/v1/orgs/${slug}/invites/${reply.body.inviteId}`, undefined, {
      token: suite.admin.token
    })
    expect(revoke.status).toBe(204)
    expect((await mailOf(slug, reply.body.inviteId)).state).toBe("cancelled")
    expect((await api.get(`/v1/orgs/${slug}/invites`, { token: suite.admin.token })).body.items).toEqual([])
    await runMailer()
    expect(sent.some((m) => m.to === email)).toBe(false)
    const audit = (await auditOf(suite.server, slug)).filter((e) => e.action === "member.uninvite")
    expect(audit.map((e) => [e.actorId, e.target, e.data])).toEqual([[suite.admin.userId, reply.body.inviteId, {}]])
    const joiner = await api.login(unique("late"))
    const accept = await api.post(`/v1/invites/${token}/accept`, undefined, { token: joiner.token })
    expect(accept.status).toBe(409)
    expect(accept.body.code).toBe("invite_revoked")
    expect((await orgsOf(joiner)).map((o) => o.slug)).not.toContain(slug)
    expect((await api.get(`/v1/invites/${token}`)).body.state).toBe("revoked")
    const again = await api.delete(`/v1/orgs/${slug}/invites/${reply.body.inviteId}`, undefined, {
      token: suite.admin.token
    })
    expect(again.status).toBe(404)
  })

  it("DELETE invite: an accepted invite is 404", async () => {
    const slug = await newOrg()
    const { reply, token } = await invite(slug, `${unique("d")}@example.test`)
    const path = `/v1/orgs/${slug}/invites/${reply.body.inviteId}`
    await api.post(`/v1/invites/${token}/accept`, undefined, { token: suite.outsider.token })
    expect((await api.delete(path, undefined, { token: suite.admin.token })).status).toBe(404)
  })

  it("DELETE invite through another org of the same admin, or of an unknown id, is 404 and revokes nothing", async () => {
    const slug = await newOrg()
    const other = await newOrg()
    const { reply, token } = await invite(slug, `${unique("d")}@example.test`)
    const through = await api.delete(`/v1/orgs/${other}/invites/${reply.body.inviteId}`, undefined, {
      token: suite.admin.token
    })
    expect(through.status).toBe(404)
    const unknown = await api.delete(`/v1/orgs/${slug}/invites/inv_unknown`, undefined, { token: suite.admin.token })
    expect(unknown.status).toBe(404)
    expect((await api.get(`/v1/invites/${token}`)).body.state).toBe("pending")
  })

  it("audit rows never hold an invite's email, its token or the token's hash", async () => {
    const slug = await newOrg()
    const emails = [unique("secret.person"), unique("other.person"), unique("third.person")].map(
      (local) => `${local}@example.test`
    )
    const first = await invite(slug, emails[0]!)
    const renewed = await invite(slug, emails[0]!, "admin")
    const second = await invite(slug, emails[1]!)
    await api.delete(`/v1/orgs/${slug}/invites/${second.reply.body.inviteId}`, undefined, { token: suite.admin.token })
    const third = await invite(slug, emails[2]!)
    const bob = await api.login(unique("bob"))
    expect((await api.post(`/v1/invites/${renewed.token}/accept`, undefined, { token: bob.token })).status).toBe(200)
    expect((await api.post(`/v1/invites/${renewed.token}/accept`, undefined, { token: bob.token })).status).toBe(409)
    const carol = await api.login(unique("carol"))
    expect((await api.post(`/v1/invites/${third.token}/accept`, undefined, { token: carol.token })).status).toBe(200)
    const tokens = [first.token, renewed.token, second.token, third.token]
    const hashes = await suite.server.run(
      Effect.flatMap(Kernel.Tokens, (t) => Effect.forEach(tokens, (token) => t.hash(token)))
    )
    const audit = await auditOf(suite.server, slug)
    expect([...new Set(audit.map((e) => e.action))].sort()).toEqual([
      "member.accept",
      "member.invite",
      "member.uninvite",
      "org.create"
    ])
    const serialized = JSON.stringify(audit).toLowerCase()
    for (const secret of [...emails, ...tokens, ...hashes]) expect(serialized).not.toContain(secret.toLowerCase())
  })
})

describe.each(backends)("spec part 3: invite expiry (%s)", (_name, stores) => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer(stores(), { invites: { inviteTtl: Duration.seconds(1) } })
  })
  afterAll(() => server.close())

  it("after seven days (here the configured TTL) an invite is expired: still listed, accept 409 invite_expired", async () => {
    const api = client(server.url)
    const admin = await api.login(unique("admin"))
    const slug = unique("exp")
    expect((await api.post("/v1/orgs", { name: "Exp", slug }, { token: admin.token })).status).toBe(201)
    const created = await api.post(
      `/v1/orgs/${slug}/invites`,
      { email: "late@example.test", role: "member" },
      { token: admin.token }
    )
    expect(created.status).toBe(201)
    const token = await server.run(
      Effect.gen(function* () {
        const store = yield* Orgs.OrgStore
        const outbox = yield* Mail.MailOutbox
        const org = Option.getOrThrow(yield* store.findBySlug(slug))
        const invite = Option.getOrThrow(yield* store.findInvite(org.id, created.body.inviteId))
        const mail = Option.getOrThrow(yield* outbox.get(invite.mailId!))
        return /invites\/([A-Za-z0-9_-]{43})/.exec(mail.text)![1]!
      })
    )
    await new Promise((resolve) => setTimeout(resolve, 1_200))
    expect((await api.get(`/v1/invites/${token}`)).body.state).toBe("expired")
    const list = await api.get(`/v1/orgs/${slug}/invites`, { token: admin.token })
    expect(list.body.items).toEqual([expect.objectContaining({ inviteId: created.body.inviteId, state: "expired" })])
    const joiner = await api.login(unique("slow"))
    const accept = await api.post(`/v1/invites/${token}/accept`, undefined, { token: joiner.token })
    expect(accept.status).toBe(409)
    expect(accept.body.code).toBe("invite_expired")
    expect(
      (await api.get("/v1/orgs", { token: joiner.token })).body.items.map((o: { slug: string }) => o.slug)
    ).not.toContain(slug)
  })
})
