import { RegistrarNameCom } from "@hostplane/adapters-providers"
import { areas as coreAreas, Domains, Jobs, Kernel } from "@hostplane/core"
import { services } from "@hostplane/core/Area"
import { appWith, areas as httpAreas } from "@hostplane/http"
import { DomainZonesMemory, type FakeNameCom, startFakeNameCom } from "@hostplane/testkit"
import { Effect, Layer, Option, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { hostileBodies, sendRaw } from "./support/HostileBodies.ts"
import { auditOf, logCapture, type Reply, type Suite, unique, useSuite } from "./support/TestServer.ts"

const nameservers = ["ns1.hostplane.test", "ns2.hostplane.test"]

const contact = {
  name: "Ada King Lovelace",
  email: "ada.lovelace@example.test",
  phone: "+44 20 7946 0958",
  organization: "Analytical Engines Ltd",
  address1: "12 St James's Square",
  city: "London",
  postalCode: "SW1Y 4JH",
  country: "gb"
}

/** Every piece of the contact, for the check that none of it is kept or logged (the phone whole, as typed and as
 * Name.com spells it: four digits alone also turn up in random ids). */
const contactPieces = [
  "ada.lovelace@example.test",
  "20 7946 0958",
  "2079460958",
  "St James",
  "SW1Y",
  "Lovelace",
  "Analytical"
]

const domainName = () => `${unique("d")}.example`

/** The registrar (the Name.com client over loopback to the fake) and the zones a suite's server uses. */
const useRegistrar = () => {
  const state = {} as { fake: FakeNameCom }
  beforeAll(async () => {
    state.fake = await startFakeNameCom()
  })
  afterAll(() => state.fake?.close())
  return state
}

/** The Name.com client pointed at a suite's fake. */
const registrarOf = (state: { fake: FakeNameCom }) =>
  RegistrarNameCom.layer({ url: state.fake.url, username: state.fake.username, token: Redacted.make(state.fake.token) })

describe.each(backends)("spec 4.13 domains (%s)", (_name, stores) => {
  const registrar = useRegistrar()
  const zones = DomainZonesMemory.make()
  const { lines: logs, layer: captureLogs } = logCapture()
  // The domains area on zones the test can fail and hold between a saga's steps, in the real area's place.
  const core = services(
    coreAreas.map((a) =>
      a.name === "domains" ? Domains.domainsAreaWith(zones.layer) : a
    ) as unknown as typeof coreAreas
  )
  const suite = useSuite(
    () => Layer.mergeAll(stores(), registrarOf(registrar)),
    { hostnames: { dnsNameservers: nameservers } },
    captureLogs,
    undefined,
    { served: appWith(httpAreas, core) as never }
  )
  const { api, newOrg, withRole } = suite
  const fake = () => registrar.fake
  const as = (session: { token: string }) => ({ token: session.token })
  const base = (slug: string) => `/v1/orgs/${slug}/domains`
  const buy = (slug: string, name: string, body: object = {}) =>
    api.post(base(slug), { name, contact, ...body }, as(suite.admin))
  const creates = (name: string) => fake().account.creates.filter((c) => c.domainName === name).length
  const jobOf = (name: string) =>
    suite.server.run(
      Effect.flatMap(Effect.service(Jobs.Jobs), (jobs) => jobs.findUnfinished(Domains.domainPurchase, name))
    )
  const storedRow = (name: string) =>
    suite.server.run(Effect.flatMap(Effect.service(Domains.DomainStore), (store) => store.find(name)))
  const runPurchases = () => suite.server.run(Jobs.JobRunner.runOnce([Domains.domainPurchaseHandler]))

  it("check (member) answers availability, premium and prices in exact cents; 1..50 names", async () => {
    const slug = await newOrg()
    const member = await withRole(slug, "member")
    fake().account.premium.set("gold-domain.example", { purchase: 2499.99, renewal: 8.29 })
    fake().account.taken.add("taken-domain.example")
    const free = domainName()
    const reply = await api.post(
      `${base(slug)}/check`,
      { names: [free.toUpperCase(), "gold-domain.example", "taken-domain.example."] },
      as(member)
    )
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({
      items: [
        { name: free, available: true, premium: false, priceCents: 1299, renewalCents: 1499 },
        { name: "gold-domain.example", available: true, premium: true, priceCents: 249999, renewalCents: 829 },
        { name: "taken-domain.example", available: false, premium: false, priceCents: null, renewalCents: null }
      ]
    })
    const tooMany = Array.from({ length: 51 }, (_, i) => `n${i}.example`)
    expect((await api.post(`${base(slug)}/check`, { names: tooMany }, as(member))).status).toBe(400)
    expect((await api.post(`${base(slug)}/check`, { names: [] }, as(member))).status).toBe(400)
    const bad = await api.post(`${base(slug)}/check`, { names: ["not a name"] }, as(member))
    expect([bad.status, bad.body.code]).toEqual([400, "bad_request"])
  })

  it("purchase is 201 Domain: registered with the contact in every role, our name servers, lock and auto-renew on; the zone exists; a resend is 200", async () => {
    const slug = await newOrg()
    const name = domainName()
    const reply = await buy(slug, name, { years: 2 })
    expect(reply.status).toBe(201)
    expect(reply.body).toEqual({
      name,
      status: "active",
      source: "purchase",
      expiresAt: expect.stringMatching(/Z$/),
      autoRenew: true,
      locked: true,
      nameservers,
      createdAt: expect.any(String)
    })
    expect(new Date(reply.body.expiresAt).getUTCFullYear()).toBe(new Date().getUTCFullYear() + 2)
    const sent = fake().account.creates.find((c) => c.domainName === name)!.body as {
      domain: {
        contacts: Record<string, unknown>
        nameservers: Array<string>
        locked: boolean
        autorenewEnabled: boolean
      }
      purchasePrice: number
      years: number
    }
    const role = {
      firstName: "Ada King",
      lastName: "Lovelace",
      companyName: "Analytical Engines Ltd",
      address1: "12 St James's Square",
      city: "London",
      zip: "SW1Y 4JH",
      country: "GB",
      phone: "+44.2079460958",
      email: "ada.lovelace@example.test"
    }
    expect(sent.domain.contacts).toEqual({ registrant: role, admin: role, tech: role, billing: role })
    expect([sent.domain.nameservers, sent.domain.locked, sent.domain.autorenewEnabled]).toEqual([
      nameservers,
      true,
      true
    ])
    expect([sent.purchasePrice, sent.years]).toEqual([25.98, 2])
    expect(zones.zones.get(name)).toBeDefined()
    const again = await buy(slug, name, { years: 2 })
    expect([again.status, again.body]).toEqual([200, reply.body])
    expect(creates(name)).toBe(1)
    const audit = (await auditOf(suite.server, slug)).filter((row) => row.action === "domain.purchase")
    expect(audit).toEqual([expect.objectContaining({ target: name, data: { years: 2, priceCents: 1299 } })])
  })

  it("the contact is kept nowhere: not in a row once registered, not in a listing, an audit row, a job or a log line", async () => {
    const slug = await newOrg()
    const name = domainName()
    const replies: Array<Reply> = [await buy(slug, name)]
    replies.push(await api.get(base(slug), as(suite.admin)), await api.get(`${base(slug)}/${name}`, as(suite.admin)))
    const row = Option.getOrThrow(await storedRow(name))
    expect(row.purchase).toBeNull()
    const jobs = await suite.server.run(
      Effect.flatMap(Effect.service(Jobs.JobStore), (store) => store.get(`job_domain_sync`))
    )
    const everything = JSON.stringify({
      replies: replies.map((reply) => reply.body),
      row,
      jobs,
      audit: await suite.server.run(Effect.flatMap(Effect.service(Kernel.AuditLog), (audit) => audit.list({}))),
      logs
    })
    for (const piece of contactPieces) expect(everything).not.toContain(piece)
  })

  it("a premium name is bought at the price the check quoted", async () => {
    const slug = await newOrg()
    const name = domainName()
    fake().account.premium.set(name, { purchase: 349.5, renewal: 59 })
    const reply = await buy(slug, name)
    expect([reply.status, reply.body.status]).toEqual([201, "active"])
    expect(
      (fake().account.creates.find((c) => c.domainName === name)!.body as { purchasePrice: number }).purchasePrice
    ).toBe(349.5)
    const audit = (await auditOf(suite.server, slug)).filter((row) => row.action === "domain.purchase")
    expect(audit.map((row) => row.data)).toEqual([{ years: 1, priceCents: 34950 }])
  })

  it("a name the registrar cannot sell is 409 domain_unavailable and leaves nothing behind", async () => {
    const slug = await newOrg()
    const name = domainName()
    fake().account.taken.add(name)
    const reply = await buy(slug, name)
    expect([reply.status, reply.body.code]).toEqual([409, "domain_unavailable"])
    expect((await api.get(base(slug), as(suite.admin))).body.items).toEqual([])
  })

  it("a declined payment is 402 payment_failed and leaves nothing behind; paying then buys it", async () => {
    const slug = await newOrg()
    const name = domainName()
    fake().account.declinePayment = true
    const declined = await buy(slug, name).finally(() => (fake().account.declinePayment = false))
    expect([declined.status, declined.body.code]).toEqual([402, "payment_failed"])
    expect((await api.get(`${base(slug)}/${name}`, as(suite.admin))).status).toBe(404)
    expect(Option.isNone(await storedRow(name))).toBe(true)
    expect(Option.isNone(await jobOf(name))).toBe(true)
    expect((await buy(slug, name)).status).toBe(201)
    expect(creates(name)).toBe(1)
  })

  it("values the registrar refuses are 422 registrar_rejected and leave nothing behind", async () => {
    const slug = await newOrg()
    const name = domainName()
    // A single-word name has no last name, which the registrar requires.
    const reply = await buy(slug, name, { contact: { ...contact, name: "Ada" } })
    expect([reply.status, reply.body.code]).toEqual([422, "registrar_rejected"])
    expect(Option.isNone(await storedRow(name))).toBe(true)
    expect((await api.get(base(slug), as(suite.admin))).body.items).toEqual([])
  })

  it("bad input is 400 before the registrar is asked: name, years, contact", async () => {
    const slug = await newOrg()
    const before = fake().requests.length
    for (const body of [
      { name: "no spaces allowed.example", contact },
      { name: domainName(), years: 11, contact },
      { name: domainName(), contact: { ...contact, phone: "555-1234" } },
      { name: domainName(), contact: { ...contact, country: "GBR" } },
      { name: domainName(), contact: { ...contact, email: "not-an-email" } },
      { name: domainName() }
    ]) {
      const reply = await api.post(base(slug), body, as(suite.admin))
      expect([reply.status, reply.body.code]).toEqual([400, "bad_request"])
    }
    expect(fake().requests.length).toBe(before)
  })

  it("four orgs buying, or importing, the same name at the same moment: one wins, three are 409 domain_taken, bought once", async () => {
    const orgs = await Promise.all([newOrg(), newOrg(), newOrg(), newOrg()])
    const bought = domainName()
    const purchases = await Promise.all(orgs.map((slug) => buy(slug, bought)))
    expect(purchases.map((reply) => [reply.status, reply.body.code ?? null]).sort()).toEqual([
      [201, null],
      [409, "domain_taken"],
      [409, "domain_taken"],
      [409, "domain_taken"]
    ])
    expect(creates(bought)).toBe(1)
    const imported = domainName()
    const imports = await Promise.all(
      orgs.map((slug) => api.post(`${base(slug)}/import`, { name: imported }, as(suite.admin)))
    )
    expect(imports.map((reply) => [reply.status, reply.body.code ?? null]).sort()).toEqual([
      [201, null],
      [409, "domain_taken"],
      [409, "domain_taken"],
      [409, "domain_taken"]
    ])
    const held = await Promise.all(orgs.map(async (slug) => (await api.get(base(slug), as(suite.admin))).body.items))
    expect(
      held
        .flat()
        .map((domain: { name: string }) => domain.name)
        .sort()
    ).toEqual([bought, imported].sort())
  })

  it("a name another org holds here is 409 domain_taken", async () => {
    const first = await newOrg()
    const second = await newOrg()
    const name = domainName()
    expect((await buy(first, name)).status).toBe(201)
    const reply = await buy(second, name)
    expect([reply.status, reply.body.code]).toEqual([409, "domain_taken"])
    const imported = await api.post(`${base(second)}/import`, { name }, as(suite.admin))
    expect([imported.status, imported.body.code]).toEqual([409, "domain_taken"])
  })

  it("a registrar answer lost after the purchase is 502 registrar_error; the resend looks the name up and never buys twice", async () => {
    const slug = await newOrg()
    const name = domainName()
    fake().failNext(/^POST \/v4\/domains$/, { drop: "after" })
    const lost = await buy(slug, name)
    expect([lost.status, lost.body.code]).toEqual([502, "registrar_error"])
    expect(creates(name)).toBe(1)
    const listed = (await api.get(base(slug), as(suite.admin))).body.items
    expect(listed).toEqual([expect.objectContaining({ name, status: "registering" })])
    const resent = await buy(slug, name)
    expect([resent.status, resent.body.status]).toEqual([201, "active"])
    expect(creates(name)).toBe(1)
    expect((await buy(slug, name)).status).toBe(200)
  })

  it("a registrar outage is 502 registrar_error; a resend continues the purchase", async () => {
    const slug = await newOrg()
    const name = domainName()
    fake().failNext(/^POST \/v4\/domains$/, { status: 503, body: { message: "Service Unavailable" } })
    const down = await buy(slug, name)
    expect([down.status, down.body.code]).toEqual([502, "registrar_error"])
    expect(creates(name)).toBe(0)
    expect((await buy(slug, name)).status).toBe(201)
    expect(creates(name)).toBe(1)
  })

  it("a step after the registration failing is 502 saga_incomplete; the resend continues at that step", async () => {
    const slug = await newOrg()
    const name = domainName()
    zones.failNext()
    const broken = await buy(slug, name)
    expect([broken.status, broken.body.code]).toEqual([502, "saga_incomplete"])
    expect(creates(name)).toBe(1)
    expect(Option.getOrThrow(await storedRow(name)).purchase?.registered).toBe(true)
    const resent = await buy(slug, name)
    expect([resent.status, resent.body.status]).toEqual([201, "active"])
    expect(creates(name)).toBe(1)
    expect(zones.zones.get(name)).toBeDefined()
  })

  it("a purchase whose request died between phases is finished by a runner, without buying twice", async () => {
    const slug = await newOrg()
    const name = domainName()
    const gate = zones.block()
    const aborted = new AbortController()
    const request = fetch(`${suite.server.url}${base(slug)}`, {
      method: "POST",
      headers: { authorization: `Bearer ${suite.admin.token}`, "content-type": "application/json" },
      body: JSON.stringify({ name, contact }),
      signal: aborted.signal
    }).catch(() => "aborted")
    await gate.entered
    expect(creates(name)).toBe(1)
    aborted.abort()
    expect(await request).toBe("aborted")
    // The request's claim is given back when it dies; a runner (here, or in another replica) takes the job over.
    await expect.poll(async () => Option.getOrThrow(await jobOf(name)).leaseOwner, { timeout: 5_000 }).toBeNull()
    gate.release()
    expect(await runPurchases()).toBeGreaterThanOrEqual(1)
    const after = await api.get(`${base(slug)}/${name}`, as(suite.admin))
    expect([after.status, after.body.status]).toEqual([200, "active"])
    expect(creates(name)).toBe(1)
    expect((await auditOf(suite.server, slug)).filter((row) => row.action === "domain.purchase")).toHaveLength(1)
  })

  it("import is 201 Domain { imported, expiresAt null, autoRenew false, locked false, our name servers } with its zone; again 200", async () => {
    const slug = await newOrg()
    const name = domainName()
    const before = fake().requests.length
    const reply = await api.post(`${base(slug)}/import`, { name: `${name.toUpperCase()}.` }, as(suite.admin))
    expect(reply.status).toBe(201)
    expect(reply.body).toEqual({
      name,
      status: "imported",
      source: "import",
      expiresAt: null,
      autoRenew: false,
      locked: false,
      nameservers,
      createdAt: expect.any(String)
    })
    expect(fake().requests.length).toBe(before)
    expect(zones.zones.get(name)).toBeDefined()
    const again = await api.post(`${base(slug)}/import`, { name }, as(suite.admin))
    expect([again.status, again.body]).toEqual([200, reply.body])
    const audit = (await auditOf(suite.server, slug)).filter((row) => row.action === "domain.import")
    expect(audit).toEqual([expect.objectContaining({ target: name })])
    for (const [path, body] of [
      ["renew", { years: 1 }],
      ["lock", { locked: false }],
      ["auth-code", undefined],
      ["sync", undefined]
    ] as const) {
      const refused = await api.post(`${base(slug)}/${name}/${path}`, body, as(suite.admin))
      expect([path, refused.status, refused.body.code]).toEqual([path, 409, "not_registered_here"])
    }
  })

  it("import of a name that is not a registrable domain (one label, a wildcard, an IP, under the service's domains) is 400 bad_request and creates nothing", async () => {
    const slug = await newOrg()
    for (const name of ["example", "*.wild.example", "192.0.2.1", "shop.apps.localhost", "a b.example", ""]) {
      const reply = await api.post(`${base(slug)}/import`, { name }, as(suite.admin))
      expect({ name, status: reply.status, code: reply.body.code }).toEqual({ name, status: 400, code: "bad_request" })
    }
    expect((await api.get(base(slug), as(suite.admin))).body.items).toEqual([])
    expect((await api.get(`/v1/orgs/${slug}/dns/zones`, as(suite.admin))).body.items).toEqual([])
  })

  it("import of a name whose zone another org has is 409 domain_taken", async () => {
    const first = await newOrg()
    const second = await newOrg()
    const parent = domainName()
    expect((await api.post(`${base(first)}/import`, { name: parent }, as(suite.admin))).status).toBe(201)
    const child = await api.post(`${base(second)}/import`, { name: `shop.${parent}` }, as(suite.admin))
    expect([child.status, child.body.code]).toEqual([409, "domain_taken"])
  })

  it("list and detail: the org's domains by name; detail adds the history newest first; another org's name is 404", async () => {
    const slug = await newOrg()
    const other = await newOrg()
    const [b, a] = [`b-${domainName()}`, `a-${domainName()}`]
    await buy(slug, b)
    await api.post(`${base(slug)}/import`, { name: a }, as(suite.admin))
    await api.post(`${base(slug)}/${b}/lock`, { locked: false }, as(suite.admin))
    const viewer = await withRole(slug, "viewer")
    const list = await api.get(base(slug), as(viewer))
    expect(list.body.items.map((d: { name: string }) => d.name)).toEqual([a, b])
    expect(list.body.items[0].history).toBeUndefined()
    const detail = await api.get(`${base(slug)}/${b}`, as(viewer))
    expect(detail.status).toBe(200)
    expect(detail.body.history).toEqual([
      { action: "domain.lock", at: expect.any(String), userId: suite.admin.userId },
      { action: "domain.purchase", at: expect.any(String), userId: suite.admin.userId }
    ])
    expect((await api.get(`${base(other)}/${b}`, as(suite.admin))).status).toBe(404)
    expect((await api.get(`${base(slug)}/missing.example`, as(suite.admin))).status).toBe(404)
  })

  it("another org's domain named under my org is 404 for renew, auto-renew, lock, auth-code and sync; the registrar is not asked", async () => {
    const theirs = await newOrg()
    const mine = await newOrg()
    const name = domainName()
    expect((await buy(theirs, name)).status).toBe(201)
    const before = (await api.get(`${base(theirs)}/${name}`, as(suite.admin))).body
    const registrarBefore = { ...fake().account.domains.get(name)! }
    const asked = fake().requests.length
    const admin = await withRole(mine, "admin")
    const replies: Array<[string, Reply]> = []
    for (const [path, body] of [
      ["renew", { years: 1 }],
      ["auto-renew", { autoRenew: false }],
      ["lock", { locked: false }],
      ["auth-code", undefined],
      ["sync", undefined]
    ] as const) {
      replies.push([path, await api.post(`${base(mine)}/${name}/${path}`, body, as(admin))])
    }
    expect(replies.map(([path, reply]) => [path, reply.status, reply.body.code])).toEqual(
      replies.map(([path]) => [path, 404, "not_found"])
    )
    expect(fake().requests.length).toBe(asked)
    expect(fake().account.domains.get(name)).toEqual(registrarBefore)
    expect((await api.get(`${base(theirs)}/${name}`, as(suite.admin))).body).toEqual(before)
    expect((await auditOf(suite.server, mine)).filter((row) => row.action.startsWith("domain."))).toEqual([])
  })

  it("hostile bodies on every domain write (malformed, not UTF-8, NUL, lone surrogate, array, 3 MiB) are 400 or 413; the registrar is not asked", async () => {
    const slug = await newOrg()
    const name = domainName()
    expect((await buy(slug, name)).status).toBe(201)
    const before = (await api.get(`${base(slug)}/${name}`, as(suite.admin))).body
    const asked = fake().requests.length
    const fresh = domainName()
    const writes = [
      [base(slug), JSON.stringify({ name: fresh, contact })],
      [`${base(slug)}/check`, JSON.stringify({ names: [fresh] })],
      [`${base(slug)}/import`, JSON.stringify({ name: fresh })],
      [`${base(slug)}/${name}/renew`, '{"years":1,"note":"x"}'],
      [`${base(slug)}/${name}/auto-renew`, '{"autoRenew":false,"note":"x"}'],
      [`${base(slug)}/${name}/lock`, '{"locked":false,"note":"x"}']
    ] as const
    for (const [path, valid] of writes) {
      for (const [what, body, status, code] of hostileBodies(valid)) {
        const reply = await sendRaw(`${suite.server.url}${path}`, "POST", suite.admin.token, body)
        expect({ path, what, status: reply.status, code: reply.code }).toEqual({ path, what, status, code })
      }
    }
    expect(fake().requests.length).toBe(asked)
    expect((await api.get(`${base(slug)}/${name}`, as(suite.admin))).body).toEqual(before)
    expect((await api.get(`${base(slug)}/${fresh}`, as(suite.admin))).status).toBe(404)
  })

  it("renew adds the years at the registrar and answers the new expiry; audit domain.renew; years outside 1..10 is 400", async () => {
    const slug = await newOrg()
    const name = domainName()
    const bought = (await buy(slug, name)).body
    const renewed = await api.post(`${base(slug)}/${name}/renew`, { years: 3 }, as(suite.admin))
    expect(renewed.status).toBe(200)
    expect(new Date(renewed.body.expiresAt).getUTCFullYear()).toBe(new Date(bought.expiresAt).getUTCFullYear() + 3)
    expect(fake().requests.at(-1)).toMatchObject({
      path: `/v4/domains/${name}:renew`,
      body: { years: 3, purchasePrice: 44.97 }
    })
    expect((await api.post(`${base(slug)}/${name}/renew`, { years: 0 }, as(suite.admin))).status).toBe(400)
    expect((await api.post(`${base(slug)}/${name}/renew`, {}, as(suite.admin))).status).toBe(400)
    const audit = (await auditOf(suite.server, slug)).filter((row) => row.action === "domain.renew")
    expect(audit).toEqual([expect.objectContaining({ target: name, data: { years: 3 } })])
    fake().account.declinePayment = true
    const declined = await api
      .post(`${base(slug)}/${name}/renew`, { years: 1 }, as(suite.admin))
      .finally(() => (fake().account.declinePayment = false))
    expect([declined.status, declined.body.code]).toEqual([402, "payment_failed"])
  })

  it("auto-renew is the org's preference; the registrar's auto-renew stays on", async () => {
    const slug = await newOrg()
    const name = domainName()
    await buy(slug, name)
    const off = await api.post(`${base(slug)}/${name}/auto-renew`, { autoRenew: false }, as(suite.admin))
    expect([off.status, off.body.autoRenew]).toEqual([200, false])
    expect(fake().account.domains.get(name)!.autorenewEnabled).toBe(true)
    expect((await api.get(`${base(slug)}/${name}`, as(suite.admin))).body.autoRenew).toBe(false)
    expect((await api.post(`${base(slug)}/${name}/auto-renew`, { autoRenew: "no" }, as(suite.admin))).status).toBe(400)
  })

  it("lock turns the registrar's transfer lock off and on; audit domain.lock", async () => {
    const slug = await newOrg()
    const name = domainName()
    await buy(slug, name)
    const off = await api.post(`${base(slug)}/${name}/lock`, { locked: false }, as(suite.admin))
    expect([off.status, off.body.locked, fake().account.domains.get(name)!.locked]).toEqual([200, false, false])
    const on = await api.post(`${base(slug)}/${name}/lock`, { locked: true }, as(suite.admin))
    expect([on.body.locked, fake().account.domains.get(name)!.locked]).toEqual([true, true])
    const audit = (await auditOf(suite.server, slug)).filter((row) => row.action === "domain.lock")
    expect(audit.map((row) => row.data)).toEqual([{ locked: false }, { locked: true }])
  })

  it("auth-code answers the registrar's code, not cached; the code is in no audit row and no log line", async () => {
    const slug = await newOrg()
    const name = domainName()
    await buy(slug, name)
    const reply = await api.post(`${base(slug)}/${name}/auth-code`, undefined, as(suite.admin))
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({ authCode: fake().account.domains.get(name)!.authCode })
    expect(reply.headers.get("cache-control")).toBe("no-store")
    const audit = (await auditOf(suite.server, slug)).filter((row) => row.action === "domain.auth_code")
    expect(audit).toEqual([expect.objectContaining({ target: name, data: {} })])
    const everything = JSON.stringify({
      audit: await suite.server.run(Effect.flatMap(Effect.service(Kernel.AuditLog), (log) => log.list({}))),
      row: await storedRow(name),
      logs
    })
    expect(everything).not.toContain(reply.body.authCode)
  })

  it("sync re-reads the registrar: new expiry and name servers; gone is transferred_out (no longer held); back is active", async () => {
    const slug = await newOrg()
    const name = domainName()
    await buy(slug, name)
    const held = fake().account.domains.get(name)!
    held.expireDate = "2040-05-06T07:08:09Z"
    held.nameservers = ["ns1.elsewhere.test"]
    const member = await withRole(slug, "member")
    const synced = await api.post(`${base(slug)}/${name}/sync`, undefined, as(member))
    expect(synced.status).toBe(200)
    expect([synced.body.expiresAt, synced.body.nameservers]).toEqual([
      "2040-05-06T07:08:09.000Z",
      ["ns1.elsewhere.test"]
    ])
    const refused = await api.delete(`/v1/orgs/${slug}`, { confirm: slug }, as(suite.admin))
    expect([refused.status, refused.body.code]).toEqual([409, "org_not_empty"])
    expect(refused.body.details.holdings).toEqual({ domains: { count: 1, names: [name] } })
    fake().account.transferOut(name)
    const gone = await api.post(`${base(slug)}/${name}/sync`, undefined, as(member))
    expect([gone.status, gone.body.status]).toEqual([200, "transferred_out"])
    for (const path of ["renew", "lock", "auth-code"]) {
      const body = path === "renew" ? { years: 1 } : path === "lock" ? { locked: true } : undefined
      expect((await api.post(`${base(slug)}/${name}/${path}`, body, as(suite.admin))).body.code).toBe(
        "not_registered_here"
      )
    }
    fake().account.taken.delete(name)
    fake().account.domains.set(name, held)
    const back = await api.post(`${base(slug)}/${name}/sync`, undefined, as(member))
    expect(back.body.status).toBe("active")
    held.expireDate = "2001-01-01T00:00:00Z"
    expect((await api.post(`${base(slug)}/${name}/sync`, undefined, as(member))).body.status).toBe("expired")
    fake().account.transferOut(name)
    await api.post(`${base(slug)}/${name}/sync`, undefined, as(member))
    expect((await api.delete(`/v1/orgs/${slug}`, { confirm: slug }, as(suite.admin))).status).toBe(204)
  })

  it("the daily sync job walks the registrar's list and marks domains the account no longer holds transferred_out", async () => {
    const slug = await newOrg()
    const [kept, lost] = [domainName(), domainName()]
    await buy(slug, kept)
    await buy(slug, lost)
    fake().account.transferOut(lost)
    fake().account.domains.get(kept)!.expireDate = "2039-01-01T00:00:00Z"
    await suite.server.run(Jobs.JobRunner.runOnce([Domains.domainSyncHandler]))
    const items = (await api.get(base(slug), as(suite.admin))).body.items as Array<{ name: string }>
    expect(items.find((d) => d.name === lost)).toMatchObject({ status: "transferred_out" })
    expect(items.find((d) => d.name === kept)).toMatchObject({
      status: "active",
      expiresAt: "2039-01-01T00:00:00.000Z",
      nameservers // the registrar's list leaves them out; the known ones stay
    })
    expect(fake().requests.some((r) => r.path.startsWith("/v4/domains?page=1"))).toBe(true)
  })

  describe("roles", () => {
    const bought = async (slug: string) => {
      const name = domainName()
      expect((await buy(slug, name)).status).toBe(201)
      return name
    }
    itChecksRoles(suite, {
      name: "GET domains",
      min: "viewer",
      request: (slug) => ({ method: "GET", path: base(slug) })
    })
    itChecksRoles(suite, {
      name: "POST domains",
      min: "admin",
      request: (slug) => ({ method: "POST", path: base(slug), body: { name: domainName(), contact } })
    })
    itChecksRoles(suite, {
      name: "POST domains/check",
      min: "member",
      request: (slug) => ({ method: "POST", path: `${base(slug)}/check`, body: { names: [domainName()] } })
    })
    itChecksRoles(suite, {
      name: "POST domains/import",
      min: "admin",
      request: (slug) => ({ method: "POST", path: `${base(slug)}/import`, body: { name: domainName() } })
    })
    itChecksRoles(suite, {
      name: "GET domains/{name}",
      min: "viewer",
      setup: bought,
      request: (slug, name) => ({ method: "GET", path: `${base(slug)}/${name}` })
    })
    for (const [path, min, body] of [
      ["renew", "admin", { years: 1 }],
      ["auto-renew", "admin", { autoRenew: false }],
      ["lock", "admin", { locked: true }],
      ["auth-code", "admin", undefined],
      ["sync", "member", undefined]
    ] as const) {
      itChecksRoles(suite, {
        name: `POST domains/{name}/${path}`,
        min,
        setup: bought,
        request: (slug, name) => ({ method: "POST", path: `${base(slug)}/${name}/${path}`, body })
      })
    }
  })
})

describe.each(backends)("spec 4.13 domains on the DNS area's zones (%s)", (_name, stores) => {
  const registrar = useRegistrar()
  const suite = useSuite(() => Layer.mergeAll(stores(), registrarOf(registrar)), {
    hostnames: { dnsNameservers: nameservers }
  })
  const as = () => ({ token: suite.admin.token })

  it("a purchase and an import create the org's zone, served with our name servers; a zone of another org is domain_taken", async () => {
    const slug = await suite.newOrg()
    const [bought, imported] = [domainName(), domainName()]
    const purchase = await suite.api.post(`/v1/orgs/${slug}/domains`, { name: bought, contact }, as())
    expect([purchase.status, purchase.body.status]).toEqual([201, "active"])
    expect((await suite.api.post(`/v1/orgs/${slug}/domains/import`, { name: imported }, as())).status).toBe(201)
    for (const name of [bought, imported]) {
      const zone = await suite.api.get(`/v1/orgs/${slug}/dns/zones/${name}`, as())
      expect(zone.status).toBe(200)
      const ns = zone.body.rrsets.find(
        (rrset: { name: string; type: string }) => rrset.name === "@" && rrset.type === "NS"
      )
      expect(ns.records).toEqual(nameservers.map((host) => `${host}.`))
    }
    const other = await suite.newOrg()
    const taken = domainName()
    expect((await suite.api.post(`/v1/orgs/${other}/dns/zones`, { name: taken }, as())).status).toBe(200)
    const refused = await suite.api.post(`/v1/orgs/${slug}/domains/import`, { name: taken }, as())
    expect([refused.status, refused.body.code]).toEqual([409, "domain_taken"])
  })
})

describe.each(backends)("spec 4.13 domains with a registrar that hangs (%s)", (_name, stores) => {
  const registrar = useRegistrar()
  // The Name.com client with a short time limit (SERVICE_REGISTRAR_TIMEOUT), so a hang is seen in the test's time.
  const suite = useSuite(
    () =>
      Layer.mergeAll(
        stores(),
        RegistrarNameCom.layer({
          url: registrar.fake.url,
          username: registrar.fake.username,
          token: Redacted.make(registrar.fake.token),
          timeout: "1 second"
        })
      ),
    { hostnames: { dnsNameservers: nameservers } }
  )
  const buy = (slug: string, name: string) =>
    suite.api.post(`/v1/orgs/${slug}/domains`, { name, contact }, { token: suite.admin.token })

  it("a purchase the registrar carries out but never answers is 502 registrar_error at the time limit; the resend never buys twice", async () => {
    const slug = await suite.newOrg()
    const name = domainName()
    registrar.fake.failNext(/^POST \/v4\/domains$/, { stall: true })
    const started = Date.now()
    const hung = await buy(slug, name)
    expect([hung.status, hung.body.code]).toEqual([502, "registrar_error"])
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(registrar.fake.account.creates.filter((c) => c.domainName === name)).toHaveLength(1)
    const resent = await buy(slug, name)
    expect([resent.status, resent.body.status]).toEqual([201, "active"])
    expect(registrar.fake.account.creates.filter((c) => c.domainName === name)).toHaveLength(1)
  })

  it("an availability check the registrar never answers is 502 registrar_error at the time limit", async () => {
    const slug = await suite.newOrg()
    registrar.fake.failNext(/checkAvailability/, { stall: true })
    const hung = await suite.api.post(
      `/v1/orgs/${slug}/domains/check`,
      { names: [domainName()] },
      { token: suite.admin.token }
    )
    expect([hung.status, hung.body.code]).toEqual([502, "registrar_error"])
  })
})

describe.each(backends)("spec 4.13 domains without a registrar or DNS (%s)", (_name, stores) => {
  const noRegistrar = useSuite(stores)
  const registrar = useRegistrar()
  const noDns = useSuite(() => Layer.mergeAll(stores(), registrarOf(registrar)), { dns: { listen: "off" } })
  const post = async (suite: Suite, path: string, body: unknown) => {
    const slug = await suite.newOrg()
    const reply = await suite.api.post(`/v1/orgs/${slug}/domains${path}`, body, { token: suite.admin.token })
    return [reply.status, reply.body.code]
  }

  it("no registrar settings: check and purchase are 503 registrar_not_configured", async () => {
    expect(await post(noRegistrar, "/check", { names: ["a.example"] })).toEqual([503, "registrar_not_configured"])
    expect(await post(noRegistrar, "", { name: "a.example", contact })).toEqual([503, "registrar_not_configured"])
  })

  it("DNS off: purchase and import are 503 dns_not_configured; bad input is still 400 first", async () => {
    expect(await post(noDns, "", { name: "a.example", contact })).toEqual([503, "dns_not_configured"])
    expect(await post(noDns, "/import", { name: "a.example" })).toEqual([503, "dns_not_configured"])
    expect(await post(noDns, "/import", { name: "not a name" })).toEqual([400, "bad_request"])
    expect(registrar.fake.account.creates).toEqual([])
  })

  it("no registrar settings: bad input is still 400 first; import, list and detail need no registrar (201, 200)", async () => {
    expect(await post(noRegistrar, "/check", { names: [] })).toEqual([400, "bad_request"])
    expect(await post(noRegistrar, "", { name: "not a name", contact })).toEqual([400, "bad_request"])
    expect(await post(noRegistrar, "", { name: domainName(), contact: { name: "Ada" } })).toEqual([400, "bad_request"])
    const slug = await noRegistrar.newOrg()
    const as = { token: noRegistrar.admin.token }
    const name = domainName()
    const imported = await noRegistrar.api.post(`/v1/orgs/${slug}/domains/import`, { name }, as)
    expect([imported.status, imported.body.status]).toEqual([201, "imported"])
    const list = await noRegistrar.api.get(`/v1/orgs/${slug}/domains`, as)
    expect([list.status, list.body.items.map((domain: { name: string }) => domain.name)]).toEqual([200, [name]])
    expect((await noRegistrar.api.get(`/v1/orgs/${slug}/domains/${name}`, as)).status).toBe(200)
  })

  it("DNS off: the list and the availability check need no zones (200)", async () => {
    const slug = await noDns.newOrg()
    const as = { token: noDns.admin.token }
    const list = await noDns.api.get(`/v1/orgs/${slug}/domains`, as)
    expect([list.status, list.body]).toEqual([200, { items: [] }])
    const name = domainName()
    const check = await noDns.api.post(`/v1/orgs/${slug}/domains/check`, { names: [name] }, as)
    expect([check.status, check.body.items.map((item: { name: string }) => item.name)]).toEqual([200, [name]])
  })
})
