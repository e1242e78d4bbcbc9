import { area, Kernel, Mail, Orgs, servicesWith } from "@hostplane/core"
import { appWith, areas } from "@hostplane/http"
import { Effect, Layer, Option } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { auditOf, type Session, type TestServer, unique, useSuite } from "./support/TestServer.ts"

/** The org ids the holdings counters were asked about. */
const asked: Array<Kernel.OrgId> = []

/** What one counter reports for an org; orgs whose slug starts with `holding-` or `hoard-` hold things. */
const counter = (kind: string, holds: (slug: string) => { count: number; names: Array<string> }) =>
  Effect.map(Effect.service(Orgs.OrgStore), (store) => ({
    kind,
    count: (orgId: Kernel.OrgId) =>
      Effect.map(store.findById(orgId), (row) => {
        if (kind === "projects") asked.push(orgId)
        return Option.isSome(row) ? holds(row.value.slug) : { count: 0, names: [] }
      })
  }))

/** A fixture area that holds things in some orgs and bills others, to exercise the delete refusals. */
const holdingArea = area({
  name: "fixture-holdings",
  stores: [],
  services: Layer.empty,
  holdings: [
    counter("projects", (slug) =>
      slug.startsWith("holding-")
        ? { count: 2, names: ["web", "api"] }
        : slug.startsWith("hoard-")
          ? { count: 7, names: ["a", "b", "c", "d", "e", "f", "g"] }
          : { count: 0, names: [] }
    ),
    counter("domains", () => ({ count: 0, names: [] })),
    counter("zones", (slug) =>
      slug.startsWith("hoard-") ? { count: 1, names: ["example.com"] } : { count: 0, names: [] }
    )
  ],
  subscription: Effect.map(
    Effect.service(Orgs.OrgStore),
    (store) => (orgId: Kernel.OrgId) =>
      Effect.map(store.findById(orgId), (row) => Option.isSome(row) && row.value.name === "Paying")
  )
})

describe.each(backends)("spec 4.2 organizations (%s)", (_name, stores) => {
  const suite = useSuite(stores, {}, undefined, undefined, { served: appWith(areas, servicesWith([holdingArea])) })
  const { api } = suite
  let server: TestServer
  let admin: Session
  let outsider: Session
  beforeAll(() => {
    ;({ server, admin, outsider } = suite)
  })

  const createOrg = async (name: string, slug?: string) => {
    const reply = await api.post("/v1/orgs", slug === undefined ? { name } : { name, slug }, { token: admin.token })
    expect(reply.status).toBe(201)
    return reply.body as { slug: string }
  }

  /** A member with `role` in `slug`, added by the admin. */
  const memberWith = async (slug: string, role: "viewer" | "member" | "admin") => {
    const subject = unique(role)
    const session = await api.login(subject)
    const added = await api.post(`/v1/orgs/${slug}/members`, { provider: "dev", subject, role }, { token: admin.token })
    expect(added.status).toBe(201)
    return session
  }

  it("GET and POST /v1/orgs need a login (401)", async () => {
    expect((await api.get("/v1/orgs")).status).toBe(401)
    const reply = await api.post("/v1/orgs", { name: "X" })
    expect(reply.status).toBe(401)
    expect(reply.body.code).toBe("unauthorized")
  })

  it("POST /v1/orgs is 201 Org and the creator becomes admin", async () => {
    const slug = unique("acme")
    const reply = await api.post("/v1/orgs", { name: "Acme Inc", slug }, { token: admin.token })
    expect(reply.status).toBe(201)
    expect(reply.body).toEqual({
      slug,
      name: "Acme Inc",
      plan: "free",
      personal: false,
      createdAt: reply.body.createdAt
    })
    const list = await api.get("/v1/orgs", { token: admin.token })
    expect(list.status).toBe(200)
    expect(list.body.items.find((o: { slug: string }) => o.slug === slug)).toMatchObject({
      role: "admin",
      projectLimit: 3
    })
  })

  it("the slug is derived from the name when absent", async () => {
    const name = `Derived ${unique("Co")}`
    const org = await createOrg(name)
    expect(org.slug).toBe(name.toLowerCase().replace(/[^a-z0-9]+/g, "-"))
  })

  it("a derived slug folds accents and drops symbols, takes a suffix when taken, and is org without letters", async () => {
    expect((await createOrg("  Ünïcode & Co.  ")).slug).toBe("unicode-co")
    expect((await createOrg("Unicode Co")).slug).toMatch(/^unicode-co-[a-z0-9]{1,5}$/)
    expect((await createOrg("!!!")).slug).toBe("org")
  })

  it("an explicit slug already in use is 409 slug_taken", async () => {
    const slug = unique("taken")
    await createOrg("First", slug)
    const reply = await api.post("/v1/orgs", { name: "Second", slug }, { token: outsider.token })
    expect(reply.status).toBe(409)
    expect(reply.body.code).toBe("slug_taken")
    const mine = (await api.get("/v1/orgs", { token: admin.token })).body.items
    expect(mine.find((o: { slug: string }) => o.slug === slug)).toMatchObject({ name: "First" })
    const theirs = (await api.get("/v1/orgs", { token: outsider.token })).body.items
    expect(theirs.map((o: { slug: string }) => o.slug)).not.toContain(slug)
  })

  it("an invalid slug or empty name is 400 bad_request", async () => {
    const badSlug = await api.post("/v1/orgs", { name: "X", slug: "Not_A_Slug" }, { token: admin.token })
    expect(badSlug.status).toBe(400)
    expect(badSlug.body.code).toBe("bad_request")
    const noName = await api.post("/v1/orgs", { name: "" }, { token: admin.token })
    expect(noName.status).toBe(400)
  })

  it("unknown fields are ignored, never applied", async () => {
    const slug = unique("mass")
    const reply = await api.post(
      "/v1/orgs",
      { name: "Mass", slug, plan: "pro", personal: true },
      { token: admin.token }
    )
    expect(reply.status).toBe(201)
    expect(reply.body.plan).toBe("free")
    expect(reply.body.personal).toBe(false)
  })

  it("PATCH renames the display name (admin), writes org.rename, and the slug stays", async () => {
    const { slug } = await createOrg("Old name", unique("ren"))
    const reply = await api.patch(`/v1/orgs/${slug}`, { name: "  New name ", slug: "hijack" }, { token: admin.token })
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({ slug, name: "New name", role: "admin", projectLimit: 3 })
    const audit = await auditOf(server, slug)
    expect(audit.filter((e) => e.action === "org.rename").map((e) => [e.actorId, e.target, e.data])).toEqual([
      [admin.userId, slug, { name: "New name" }]
    ])
  })

  itChecksRoles(suite, {
    name: "PATCH org",
    min: "admin",
    request: (slug) => ({ method: "PATCH", path: `/v1/orgs/${slug}`, body: { name: "Renamed" } }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "DELETE org",
    min: "admin",
    request: (slug) => ({ method: "DELETE", path: `/v1/orgs/${slug}`, body: { confirm: slug } }),
    ok: 204
  })
  itChecksRoles(suite, {
    name: "GET notifications",
    min: "viewer",
    request: (slug) => ({ method: "GET", path: `/v1/orgs/${slug}/notifications` }),
    ok: 200
  })

  it("PATCH for a missing org is 404; an empty name 400", async () => {
    const { slug } = await createOrg("Guarded", unique("grd"))
    const missing = await api.patch(`/v1/orgs/${unique("nope")}`, { name: "x" }, { token: admin.token })
    expect(missing.status).toBe(404)
    const empty = await api.patch(`/v1/orgs/${slug}`, { name: "" }, { token: admin.token })
    expect(empty.status).toBe(400)
  })

  it("DELETE with confirm equal to the slug (trimmed) is 204 and org.delete survives the org", async () => {
    const { slug } = await createOrg("Doomed", unique("del"))
    const member = await memberWith(slug, "member")
    const orgId = await server.run(
      Effect.flatMap(Effect.service(Orgs.OrgStore), (s) => s.findBySlug(slug)).pipe(
        Effect.map((o) => Option.getOrThrow(o).id)
      )
    )
    asked.length = 0
    const reply = await api.delete(`/v1/orgs/${slug}`, { confirm: `  ${slug} \n` }, { token: admin.token })
    expect(reply.status).toBe(204)
    expect(asked).toEqual([orgId])
    for (const session of [admin, member]) {
      const listed = (await api.get("/v1/orgs", { token: session.token })).body.items
      expect(listed.map((o: { slug: string }) => o.slug)).not.toContain(slug)
    }
    expect(
      Option.isNone(await server.run(Effect.flatMap(Effect.service(Orgs.OrgStore), (s) => s.findById(orgId))))
    ).toBe(true)
    const audit = await server.run(Effect.flatMap(Effect.service(Kernel.AuditLog), (a) => a.list({ orgId })))
    expect(audit.filter((e) => e.action === "org.delete").map((e) => [e.actorId, e.target])).toEqual([
      [admin.userId, slug]
    ])
    expect(audit.map((e) => e.action)).toContain("member.add")
  })

  it("DELETE drops the unsent invitation mail of the org's open invites", async () => {
    const { slug } = await createOrg("Inviting", unique("inv"))
    const invite = await api.post(
      `/v1/orgs/${slug}/invites`,
      { email: "pending@example.test", role: "member" },
      { token: admin.token }
    )
    expect(invite.status).toBe(201)
    const mailId = await server.run(
      Effect.gen(function* () {
        const store = yield* Orgs.OrgStore
        const org = Option.getOrThrow(yield* store.findBySlug(slug))
        return Option.getOrThrow(yield* store.findInvite(org.id, invite.body.inviteId)).mailId!
      })
    )
    expect((await api.delete(`/v1/orgs/${slug}`, { confirm: slug }, { token: admin.token })).status).toBe(204)
    const mail = await server.run(Effect.flatMap(Effect.service(Mail.MailOutbox), (outbox) => outbox.get(mailId)))
    expect(Option.getOrThrow(mail).state).toBe("cancelled")
  })

  it("DELETE with a confirm that differs is 400 and deletes nothing", async () => {
    const { slug } = await createOrg("Kept", unique("keep"))
    const reply = await api.delete(`/v1/orgs/${slug}`, { confirm: "something-else" }, { token: admin.token })
    expect(reply.status).toBe(400)
    expect(
      (await api.get("/v1/orgs", { token: admin.token })).body.items.map((o: { slug: string }) => o.slug)
    ).toContain(slug)
  })

  it("DELETE of a personal org is 409 personal_org", async () => {
    const me = await api.get("/v1/me", { token: admin.token })
    const personal = me.body.orgs.find((o: { personal: boolean }) => o.personal).slug
    const reply = await api.delete(`/v1/orgs/${personal}`, { confirm: personal }, { token: admin.token })
    expect(reply.status).toBe(409)
    expect(reply.body.code).toBe("personal_org")
    const mine = (await api.get("/v1/orgs", { token: admin.token })).body.items
    expect(mine.map((o: { slug: string }) => o.slug)).toContain(personal)
  })

  it("DELETE of an org that holds projects is 409 org_not_empty with details.holdings", async () => {
    const { slug } = await createOrg("Holding", unique("holding"))
    const reply = await api.delete(`/v1/orgs/${slug}`, { confirm: slug }, { token: admin.token })
    expect(reply.status).toBe(409)
    expect(reply.body.code).toBe("org_not_empty")
    expect(reply.body.details.holdings).toEqual({ projects: { count: 2, names: ["web", "api"] } })
  })

  it("details.holdings lists each kind with a count above 0 and at most five of its names; nothing is deleted", async () => {
    const { slug } = await createOrg("Hoarding", unique("hoard"))
    const reply = await api.delete(`/v1/orgs/${slug}`, { confirm: slug }, { token: admin.token })
    expect(reply.status).toBe(409)
    expect(reply.body.code).toBe("org_not_empty")
    expect(reply.body.details).toEqual({
      holdings: {
        projects: { count: 7, names: ["a", "b", "c", "d", "e"] },
        zones: { count: 1, names: ["example.com"] }
      }
    })
    const mine = (await api.get("/v1/orgs", { token: admin.token })).body.items
    expect(mine.map((o: { slug: string }) => o.slug)).toContain(slug)
    expect((await auditOf(server, slug)).map((e) => e.action)).not.toContain("org.delete")
  })

  it("DELETE of an org with a live paid subscription is 409 active_subscription", async () => {
    const slug = unique("pay")
    expect((await api.post("/v1/orgs", { name: "Paying", slug }, { token: admin.token })).status).toBe(201)
    const reply = await api.delete(`/v1/orgs/${slug}`, { confirm: slug }, { token: admin.token })
    expect(reply.status).toBe(409)
    expect(reply.body.code).toBe("active_subscription")
    const mine = (await api.get("/v1/orgs", { token: admin.token })).body.items
    expect(mine.map((o: { slug: string }) => o.slug)).toContain(slug)
  })

  it("notifications: newest first, limit honoured", async () => {
    const { slug } = await createOrg("Noticed", unique("ntf"))
    const viewer = await memberWith(slug, "viewer")
    await server.run(
      Effect.gen(function* () {
        const store = yield* Orgs.OrgStore
        const org = Option.getOrThrow(yield* store.findBySlug(slug))
        for (const [i, kind] of (["limit", "backup", "restore"] as const).entries()) {
          yield* store.insertNotification({
            id: `ntf_${slug}_${i}`,
            orgId: org.id,
            kind,
            message: `notice ${i}`,
            projectName: i === 0 ? null : "web",
            createdAt: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(),
            mailId: null
          })
        }
      })
    )
    const reply = await api.get(`/v1/orgs/${slug}/notifications`, { token: viewer.token })
    expect(reply.status).toBe(200)
    expect(
      reply.body.items.map((n: { id: string; kind: string; projectName: string | null; sentAt: string | null }) => [
        n.id,
        n.kind,
        n.projectName,
        n.sentAt
      ])
    ).toEqual([
      [`ntf_${slug}_2`, "restore", "web", null],
      [`ntf_${slug}_1`, "backup", "web", null],
      [`ntf_${slug}_0`, "limit", null, null]
    ])
    expect(reply.body.items[0]).toEqual({
      id: `ntf_${slug}_2`,
      kind: "restore",
      message: "notice 2",
      projectName: "web",
      createdAt: "2026-01-01T00:02:00.000Z",
      sentAt: null
    })
    expect(reply.body.nextCursor).toBeNull()
    const limited = await api.get(`/v1/orgs/${slug}/notifications?limit=1`, { token: viewer.token })
    expect(limited.body.items.map((n: { id: string }) => n.id)).toEqual([`ntf_${slug}_2`])
    const badLimit = await api.get(`/v1/orgs/${slug}/notifications?limit=abc`, { token: viewer.token })
    expect(badLimit.status).toBe(400)
  })

  it("notifications: a page is 50 rows when no limit is given (decisions part 1), 200 at most", async () => {
    const { slug } = await createOrg("Many", unique("ntf"))
    await server.run(
      Effect.gen(function* () {
        const store = yield* Orgs.OrgStore
        const org = Option.getOrThrow(yield* store.findBySlug(slug))
        for (let i = 0; i < 201; i++) {
          yield* store.insertNotification({
            id: `ntf_${slug.replaceAll("-", "_")}_${String(i).padStart(3, "0")}`,
            orgId: org.id,
            kind: "limit",
            message: `notice ${i}`,
            projectName: null,
            createdAt: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
            mailId: null
          })
        }
      })
    )
    const path = `/v1/orgs/${slug}/notifications`
    const first = (await api.get(path, { token: admin.token })).body
    expect(first.items).toHaveLength(50)
    expect(first.items[0].message).toBe("notice 200")
    const second = (await api.get(`${path}?cursor=${first.nextCursor}`, { token: admin.token })).body
    expect(second.items).toHaveLength(50)
    expect(second.items[0].message).toBe("notice 150")
    const widest = (await api.get(`${path}?limit=200`, { token: admin.token })).body
    expect(widest.items).toHaveLength(200)
    const rest = (await api.get(`${path}?limit=200&cursor=${widest.nextCursor}`, { token: admin.token })).body
    expect(rest).toEqual({ items: [expect.objectContaining({ message: "notice 0" })], nextCursor: null })
    expect((await api.get(`${path}?limit=201`, { token: admin.token })).status).toBe(400)
  })

  it("notifications are a paged list (spec part 8, decisions part 1): nextCursor walks every row once, null on the last page; a cursor it did not hand out is 400", async () => {
    const { slug } = await createOrg("Paged", unique("ntf"))
    const viewer = await memberWith(slug, "viewer")
    // Five rows, two at one instant split across pages 1 and 2: the cursor orders them by id as the list does.
    const times = [0, 1, 2, 2, 3].map((minute) => new Date(Date.UTC(2026, 0, 1, 0, minute)).toISOString())
    await server.run(
      Effect.gen(function* () {
        const store = yield* Orgs.OrgStore
        const org = Option.getOrThrow(yield* store.findBySlug(slug))
        for (const [i, createdAt] of times.entries()) {
          yield* store.insertNotification({
            id: `ntf_${slug.replaceAll("-", "_")}_${i}`,
            orgId: org.id,
            kind: "backup",
            message: `notice ${i}`,
            projectName: null,
            createdAt,
            mailId: null
          })
        }
      })
    )
    const path = `/v1/orgs/${slug}/notifications`
    const all = (await api.get(path, { token: viewer.token })).body
    expect(all.items).toHaveLength(5)
    expect(all.nextCursor).toBeNull()
    const walked: Array<string> = []
    const cursors: Array<string> = []
    let cursor: string | null = null
    do {
      const query: string = cursor === null ? "?limit=2" : `?limit=2&cursor=${encodeURIComponent(cursor)}`
      const page = await api.get(`${path}${query}`, { token: viewer.token })
      expect(page.status).toBe(200)
      expect(Object.keys(page.body).sort()).toEqual(["items", "nextCursor"])
      walked.push(...page.body.items.map((n: { id: string }) => n.id))
      cursor = page.body.nextCursor
      if (cursor !== null) cursors.push(cursor)
    } while (cursor !== null)
    expect(walked).toEqual(all.items.map((n: { id: string }) => n.id))
    expect(cursors).toHaveLength(2)
    // A cursor positions in time and id only: in another org it pages that org's own rows, never these.
    const other = await createOrg("Other", unique("ntf"))
    const elsewhere = await api.get(`/v1/orgs/${other.slug}/notifications?cursor=${cursors[0]}`, {
      token: admin.token
    })
    expect(elsewhere.body).toEqual({ items: [], nextCursor: null })
    const forged = Buffer.from(JSON.stringify(["yesterday", "ntf_x"])).toString("base64url")
    for (const bad of ["nope", "%00", "%FF", forged, "a".repeat(500)]) {
      const reply = await api.get(`${path}?cursor=${bad}`, { token: viewer.token })
      expect([bad, reply.status, reply.body.code]).toEqual([bad, 400, "bad_request"])
    }
    expect((await api.get(`${path}?cursor=${cursors[0]}`, { token: outsider.token })).status).toBe(404)
  })
})
