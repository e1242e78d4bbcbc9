import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { hostileBodies, sendRaw } from "./support/HostileBodies.ts"
import { auditOf, unique, useSuite } from "./support/TestServer.ts"

const zoneName = () => `${unique("zone")}.example`

describe.each(backends)("spec 4.14 DNS zones (%s)", (_name, stores) => {
  const suite = useSuite(stores)
  const { api, newOrg, withRole } = suite

  const zonesOf = (slug: string) => `/v1/orgs/${slug}/dns/zones`
  const zoneOf = (slug: string, zone: string) => `${zonesOf(slug)}/${zone}`
  const rrsetOf = (slug: string, zone: string, name: string, type: string) =>
    `${zoneOf(slug, zone)}/rrsets/${encodeURIComponent(name)}/${type}`
  const createZone = async (slug: string, name = zoneName()) => {
    const reply = await api.post(zonesOf(slug), { name }, { token: suite.admin.token })
    if (reply.status !== 200) throw new Error(`zone create failed: ${reply.status} ${JSON.stringify(reply.body)}`)
    return reply.body.name as string
  }
  const put = (slug: string, zone: string, name: string, type: string, body: unknown) =>
    api.put(rrsetOf(slug, zone, name, type), body, { token: suite.admin.token })
  const serialOf = async (slug: string, zone: string) =>
    (await api.get(zoneOf(slug, zone), { token: suite.admin.token })).body.serial as number

  it("POST zones (admin) is 200 ZoneDetail: normalized name, SOA and apex NS managed_by system; audit dns.zone.create", async () => {
    const slug = await newOrg()
    const label = unique("Bücher")
    const reply = await api.post(zonesOf(slug), { name: ` ${label}.Example. ` }, { token: suite.admin.token })
    expect(reply.status).toBe(200)
    const name = reply.body.name
    expect(name).toMatch(/^xn--bcher-.*\.example$/)
    expect(Object.keys(reply.body).sort()).toEqual(["createdAt", "dnssec", "name", "nameservers", "rrsets", "serial"])
    expect(reply.body).toMatchObject({
      dnssec: "off",
      nameservers: ["ns1.hostplane.localhost", "ns2.hostplane.localhost"]
    })
    expect(Number.isInteger(reply.body.serial)).toBe(true)
    expect(reply.body.rrsets).toEqual([
      {
        name: "@",
        type: "SOA",
        ttl: 3600,
        records: [`ns1.hostplane.localhost. hostmaster.${name}. ${reply.body.serial} 3600 600 1209600 300`],
        managed_by: "system"
      },
      {
        name: "@",
        type: "NS",
        ttl: 3600,
        records: ["ns1.hostplane.localhost.", "ns2.hostplane.localhost."],
        managed_by: "system"
      }
    ])
    const audit = (await auditOf(suite.server, slug)).filter((event) => event.action === "dns.zone.create")
    expect(audit).toHaveLength(1)
    expect(audit[0]).toMatchObject({ actorId: suite.admin.userId, target: name, data: { zone: name } })
  })

  it("POST zones again answers the existing zone unchanged with 200, audited once", async () => {
    const slug = await newOrg()
    const name = await createZone(slug)
    await put(slug, name, "www", "A", { records: ["192.0.2.1"] })
    const before = await api.get(zoneOf(slug, name), { token: suite.admin.token })
    const again = await api.post(zonesOf(slug), { name: name.toUpperCase() }, { token: suite.admin.token })
    expect(again.status).toBe(200)
    expect(again.body).toEqual(before.body)
    const audit = (await auditOf(suite.server, slug)).filter((event) => event.action === "dns.zone.create")
    expect(audit).toHaveLength(1)
  })

  it("a zone another org holds, or the parent or child of one, is 409 zone_taken", async () => {
    const first = await newOrg()
    const second = await newOrg()
    const name = await createZone(first)
    for (const taken of [name, `shop.${name}`]) {
      const reply = await api.post(zonesOf(second), { name: taken }, { token: suite.admin.token })
      expect({ taken, status: reply.status, code: reply.body.code }).toEqual({
        taken,
        status: 409,
        code: "zone_taken"
      })
    }
    const child = await createZone(first, `deep.${zoneName()}`)
    const parent = await api.post(
      zonesOf(second),
      { name: child.split(".").slice(1).join(".") },
      { token: suite.admin.token }
    )
    expect(parent.status).toBe(409)
    expect(parent.body.code).toBe("zone_taken")
    // The same org may hold a zone and a child zone of it.
    expect((await api.post(zonesOf(first), { name: `sub.${name}` }, { token: suite.admin.token })).status).toBe(200)
  })

  it("orgs creating a zone, its parent and its child at the same moment: one wins, every other is 409 zone_taken", async () => {
    for (let round = 0; round < 5; round++) {
      const orgs = await Promise.all([newOrg(), newOrg(), newOrg(), newOrg()])
      const parent = zoneName()
      const names = [parent, `child.${parent}`, parent, `deeper.child.${parent}`]
      const replies = await Promise.all(
        orgs.map((slug, index) => api.post(zonesOf(slug), { name: names[index] }, { token: suite.admin.token }))
      )
      const outcome = replies.map((reply) => [reply.status, reply.body.code ?? null])
      expect({ round, won: outcome.filter(([status]) => status === 200).length }).toEqual({ round, won: 1 })
      expect(outcome.filter(([status]) => status !== 200)).toEqual([
        [409, "zone_taken"],
        [409, "zone_taken"],
        [409, "zone_taken"]
      ])
      const held = await Promise.all(
        orgs.map(async (slug) => (await api.get(zonesOf(slug), { token: suite.admin.token })).body.items.length)
      )
      expect(held.reduce((total, count) => total + count, 0)).toBe(1)
    }
  })

  it("a zone name that is not a domain, or is under the service's own domains, is 400 bad_request", async () => {
    const slug = await newOrg()
    for (const name of [
      "",
      "not a name",
      "*.example.com",
      "single",
      "x.apps.localhost",
      "a..b.example",
      "-a.example"
    ]) {
      const reply = await api.post(zonesOf(slug), { name }, { token: suite.admin.token })
      expect({ name, status: reply.status, code: reply.body.code }).toEqual({ name, status: 400, code: "bad_request" })
    }
    expect((await api.post(zonesOf(slug), {}, { token: suite.admin.token })).status).toBe(400)
  })

  it("GET zones (viewer) lists the org's zones without rrsets; another org's zone is 404", async () => {
    const slug = await newOrg()
    const names = [await createZone(slug), await createZone(slug)].sort()
    const viewer = await withRole(slug, "viewer")
    const list = await api.get(zonesOf(slug), { token: viewer.token })
    expect(list.status).toBe(200)
    expect(list.body.items.map((zone: { name: string }) => zone.name)).toEqual(names)
    for (const zone of list.body.items) {
      expect(Object.keys(zone).sort()).toEqual(["createdAt", "dnssec", "name", "nameservers", "serial"])
    }
    const other = await newOrg()
    expect((await api.get(zoneOf(other, names[0]!), { token: suite.admin.token })).status).toBe(404)
    expect((await api.get(zoneOf(slug, "missing.example"), { token: viewer.token })).status).toBe(404)
  })

  it("another org's zone named under my org is 404 for every write (rrset put and delete, zone delete, dnssec, ds); it stays as it was", async () => {
    const mine = await newOrg()
    const theirs = await newOrg()
    const zone = await createZone(theirs)
    await put(theirs, zone, "www", "A", { records: ["192.0.2.1"] })
    const before = (await api.get(zoneOf(theirs, zone), { token: suite.admin.token })).body
    const member = await withRole(mine, "member")
    const admin = await withRole(mine, "admin")
    const replies = [
      await api.put(rrsetOf(mine, zone, "www", "A"), { records: ["192.0.2.9"] }, { token: member.token }),
      await api.put(rrsetOf(mine, zone, "new", "TXT"), { records: ["x"] }, { token: admin.token }),
      await api.delete(rrsetOf(mine, zone, "www", "A"), undefined, { token: member.token }),
      await api.post(`${zoneOf(mine, zone)}/dnssec`, { enabled: true }, { token: admin.token }),
      await api.put(`${zoneOf(mine, zone)}/dnssec/ds`, { ds: [] }, { token: admin.token }),
      await api.delete(zoneOf(mine, zone), undefined, { token: admin.token })
    ]
    expect(replies.map((reply) => [reply.status, reply.body.code])).toEqual(replies.map(() => [404, "not_found"]))
    expect((await api.get(zoneOf(theirs, zone), { token: suite.admin.token })).body).toEqual(before)
    const audit = await auditOf(suite.server, mine)
    expect(audit.filter((event) => event.action.startsWith("dns."))).toEqual([])
  })

  it("DELETE zone (admin) removes it with every record: 204, then 404; audit dns.zone.delete", async () => {
    const slug = await newOrg()
    const name = await createZone(slug)
    await put(slug, name, "www", "A", { records: ["192.0.2.1"] })
    const reply = await api.delete(zoneOf(slug, name), undefined, { token: suite.admin.token })
    expect(reply.status).toBe(204)
    expect((await api.get(zoneOf(slug, name), { token: suite.admin.token })).status).toBe(404)
    expect((await api.delete(zoneOf(slug, name), undefined, { token: suite.admin.token })).status).toBe(404)
    const audit = (await auditOf(suite.server, slug)).filter((event) => event.action === "dns.zone.delete")
    expect(audit).toMatchObject([{ target: name, data: { zone: name } }])
    // Another org may now take the name.
    expect((await api.post(zonesOf(await newOrg()), { name }, { token: suite.admin.token })).status).toBe(200)
  })

  it("PUT rrset (member) is 200 RRset, stored in canonical form; ttl defaults to 300; audit dns.rrset.set", async () => {
    const slug = await newOrg()
    const zone = await createZone(slug)
    const member = await withRole(slug, "member")
    const cases: ReadonlyArray<[string, string, ReadonlyArray<string>, ReadonlyArray<string>]> = [
      ["www", "A", ["192.0.2.1", " 192.0.2.2 ", "192.0.2.1"], ["192.0.2.1", "192.0.2.2"]],
      ["www", "aaaa", ["2001:DB8:0:0:0:0:0:1", "::ffff:192.0.2.1"], ["2001:db8::1", "::ffff:c000:201"]],
      ["@", "MX", ["10 mail", "20 mx.other.example.", "0 ."], [`10 mail.${zone}.`, "20 mx.other.example.", "0 ."]],
      ["_sip._tcp", "SRV", ["10 5 5060 sip"], [`10 5 5060 sip.${zone}.`]],
      [
        "@",
        "CAA",
        ['0 issue "letsencrypt.org"', "128 ISSUEWILD ;"],
        ['0 issue "letsencrypt.org"', '128 issuewild ";"']
      ],
      ["Blog", "CNAME", ["@"], [`${zone}.`]],
      ["*.dev", "A", ["198.51.100.7"], ["198.51.100.7"]],
      ["sub", "NS", ["ns1.other.example.", "ns2.other.example."], ["ns1.other.example.", "ns2.other.example."]],
      ["1", "PTR", ["host.example.net."], ["host.example.net."]]
    ]
    for (const [name, type, records, stored] of cases) {
      const reply = await api.put(rrsetOf(slug, zone, name, type), { records }, { token: member.token })
      expect({ name, type, status: reply.status, body: reply.body }).toEqual({
        name,
        type,
        status: 200,
        body: { name: name.toLowerCase(), type: type.toUpperCase(), ttl: 300, records: stored, managed_by: null }
      })
    }
    const detail = await api.get(zoneOf(slug, zone), { token: member.token })
    expect(detail.body.rrsets.length).toBe(2 + cases.length)
    expect(detail.body.rrsets.find((r: { type: string }) => r.type === "SRV")).toMatchObject({ name: "_sip._tcp" })
    const audit = (await auditOf(suite.server, slug)).filter((event) => event.action === "dns.rrset.set")
    expect(audit).toHaveLength(cases.length)
    expect(audit[0]).toMatchObject({ actorId: member.userId, target: zone, data: { zone, name: "www", type: "A" } })
  })

  it("a TXT record longer than 255 bytes comes back as quoted strings of at most 255 bytes that join to the same text", async () => {
    const slug = await newOrg()
    const zone = await createZone(slug)
    const text = `v=DKIM1; k=rsa; p=${"A".repeat(600)}`
    const reply = await put(slug, zone, "sel._domainkey", "TXT", {
      records: [text, '"quoted \\"part\\"" "two"', "héllo"],
      ttl: 3600
    })
    expect(reply.status).toBe(200)
    expect(reply.body.ttl).toBe(3600)
    const [long, quoted, accented] = reply.body.records as Array<string>
    const chunks = long!.match(/"[^"]*"/g)!.map((chunk) => chunk.slice(1, -1))
    expect(chunks.map((chunk) => chunk.length)).toEqual([255, 255, text.length - 510])
    expect(chunks.join("")).toBe(text)
    expect(quoted).toBe('"quoted \\"part\\"" "two"')
    expect(accented).toBe('"h\\195\\169llo"')
  })

  it("shape errors are 400 bad_request with the record and reason in details", async () => {
    const slug = await newOrg()
    const zone = await createZone(slug)
    const bad: ReadonlyArray<[string, string]> = [
      ["A", "256.1.1.1"],
      ["A", "192.0.2"],
      ["A", "01.2.3.4"],
      ["AAAA", "2001:db8::1::2"],
      ["AAAA", "192.0.2.1"],
      ["MX", "mail.example.com."],
      ["MX", "70000 mail"],
      ["SRV", "10 5 mail"],
      ["SRV", "1 2 70000 host"],
      ["CAA", "0 issue"],
      ["CAA", '300 issue "ca.example"'],
      ["TXT", '"unclosed'],
      ["CNAME", "two names"],
      ["NS", "bad..name"],
      ["PTR", "under_score!"]
    ]
    for (const [type, record] of bad) {
      const reply = await put(slug, zone, "x", type, { records: [record] })
      expect({ type, record, status: reply.status, code: reply.body.code, detail: reply.body.details?.record }).toEqual(
        {
          type,
          record,
          status: 400,
          code: "bad_request",
          detail: record
        }
      )
      expect(typeof reply.body.details.reason).toBe("string")
    }
  })

  it("unknown types, bad names, records: [] and a ttl outside 60..86400 are 400", async () => {
    const slug = await newOrg()
    const zone = await createZone(slug)
    const refused: ReadonlyArray<[string, string, unknown]> = [
      ["www", "SPF", { records: ["v=spf1 -all"] }],
      ["www", "SOA", { records: ["x"] }],
      ["www", "A", { records: [] }],
      ["www", "A", { records: ["192.0.2.1"], ttl: 59 }],
      ["www", "A", { records: ["192.0.2.1"], ttl: 86401 }],
      ["a.*", "A", { records: ["192.0.2.1"] }],
      ["bad name", "A", { records: ["192.0.2.1"] }],
      ["*.x", "NS", { records: ["ns.example."] }],
      ["www", "A", { records: "192.0.2.1" }]
    ]
    for (const [name, type, body] of refused) {
      const reply = await put(slug, zone, name, type, body)
      expect({ name, type, status: reply.status, code: reply.body.code }).toEqual({
        name,
        type,
        status: 400,
        code: "bad_request"
      })
    }
    expect((await api.get(zoneOf(slug, zone), { token: suite.admin.token })).body.rrsets).toHaveLength(2)
  })

  it("an rrset larger than one DNS answer can carry (16384 bytes in wire form) is 400 bad_request with details { limit, size }; nothing is stored", async () => {
    const slug = await newOrg()
    const zone = await createZone(slug)
    // Each A record of "many" takes its owner name in wire form, 10 bytes of type, class, TTL and length, and 4 of
    // address: the most that fit is accepted, one more is refused.
    const perRecord = `many.${zone}`.split(".").reduce((total, label) => total + label.length + 1, 1) + 10 + 4
    const fitting = Math.floor(16384 / perRecord)
    const addresses = (count: number) =>
      Array.from({ length: count }, (_, index) => `10.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}`)
    const over = await put(slug, zone, "many", "A", { records: addresses(fitting + 1) })
    expect({ status: over.status, code: over.body.code, details: over.body.details }).toEqual({
      status: 400,
      code: "bad_request",
      details: { limit: 16384, size: (fitting + 1) * perRecord }
    })
    const fits = await put(slug, zone, "many", "A", { records: addresses(fitting) })
    expect([fits.status, fits.body.records.length]).toEqual([200, fitting])
    // Twelve TXT records of 6000 bytes (each fine alone), and one TXT record of 20000 bytes.
    const serial = await serialOf(slug, zone)
    for (const [name, records] of [
      ["big", Array.from({ length: 12 }, (_, index) => String(index % 10).repeat(6000))],
      ["huge", ["h".repeat(20000)]]
    ] as const) {
      const reply = await put(slug, zone, name, "TXT", { records })
      expect({ name, status: reply.status, code: reply.body.code, limit: reply.body.details?.limit }).toEqual({
        name,
        status: 400,
        code: "bad_request",
        limit: 16384
      })
    }
    const detail = await api.get(zoneOf(slug, zone), { token: suite.admin.token })
    expect(detail.body.serial).toBe(serial)
    expect(detail.body.rrsets.map((rrset: { name: string }) => rrset.name)).toEqual(["@", "@", "many"])
  })

  it("hostile bodies on every DNS write (malformed, not UTF-8, NUL, lone surrogate, array, 3 MiB) are 400 or 413, and change nothing", async () => {
    const slug = await newOrg()
    const zone = await createZone(slug)
    const before = (await api.get(zoneOf(slug, zone), { token: suite.admin.token })).body
    const fresh = zoneName()
    const writes = [
      ["POST", zonesOf(slug), JSON.stringify({ name: fresh })],
      ["PUT", rrsetOf(slug, zone, "www", "TXT"), JSON.stringify({ records: ["hello"], ttl: 300 })],
      ["POST", `${zoneOf(slug, zone)}/dnssec`, '{"enabled":true,"note":"x"}'],
      ["PUT", `${zoneOf(slug, zone)}/dnssec/ds`, JSON.stringify({ ds: ["1 13 2 ab"] })]
    ] as const
    for (const [method, path, valid] of writes) {
      for (const [what, body, status, code] of hostileBodies(valid)) {
        const reply = await sendRaw(`${suite.server.url}${path}`, method, suite.admin.token, body)
        expect({ path, what, status: reply.status, code: reply.code }).toEqual({ path, what, status, code })
      }
    }
    expect((await api.get(zoneOf(slug, zone), { token: suite.admin.token })).body).toEqual(before)
    expect((await api.get(zoneOf(slug, fresh), { token: suite.admin.token })).status).toBe(404)
    expect(
      (await auditOf(suite.server, slug)).map((event) => event.action).filter((action) => action.startsWith("dns."))
    ).toEqual(["dns.zone.create"])
  })

  it("the SOA and apex NS are 409 managed_rrset for PUT and DELETE", async () => {
    const slug = await newOrg()
    const zone = await createZone(slug)
    for (const type of ["SOA", "NS", "ns"]) {
      const set = await put(slug, zone, "@", type, { records: ["ns.example."] })
      expect({ type, status: set.status, code: set.body.code }).toEqual({ type, status: 409, code: "managed_rrset" })
      const removed = await api.delete(rrsetOf(slug, zone, "@", type), undefined, { token: suite.admin.token })
      expect({ type, status: removed.status, code: removed.body.code }).toEqual({
        type,
        status: 409,
        code: "managed_rrset"
      })
    }
  })

  it("a CNAME at the apex, beside another type or with more than one record is 409 cname_conflict", async () => {
    const slug = await newOrg()
    const zone = await createZone(slug)
    const conflict = async (name: string, type: string, records: ReadonlyArray<string>) => {
      const reply = await put(slug, zone, name, type, { records })
      expect({ name, type, status: reply.status, code: reply.body.code }).toEqual({
        name,
        type,
        status: 409,
        code: "cname_conflict"
      })
    }
    await conflict("@", "CNAME", ["target.example."])
    await conflict("alias", "CNAME", ["a.example.", "b.example."])
    expect((await put(slug, zone, "www", "A", { records: ["192.0.2.1"] })).status).toBe(200)
    await conflict("www", "CNAME", ["target.example."])
    expect((await put(slug, zone, "alias", "CNAME", { records: ["t.example."] })).status).toBe(200)
    await conflict("alias", "TXT", ["text"])
    await conflict("alias", "NS", ["ns.example."])
    // Replacing the CNAME itself is fine.
    expect((await put(slug, zone, "alias", "CNAME", { records: ["other.example."] })).status).toBe(200)
  })

  it("DELETE rrset (member) is 204 and audited; an rrset that does not exist is 404", async () => {
    const slug = await newOrg()
    const zone = await createZone(slug)
    const member = await withRole(slug, "member")
    await put(slug, zone, "www", "A", { records: ["192.0.2.1"] })
    const reply = await api.delete(rrsetOf(slug, zone, "WWW", "a"), undefined, { token: member.token })
    expect(reply.status).toBe(204)
    expect((await api.delete(rrsetOf(slug, zone, "www", "A"), undefined, { token: member.token })).status).toBe(404)
    expect((await api.delete(rrsetOf(slug, zone, "www", "BOGUS"), undefined, { token: member.token })).status).toBe(400)
    const audit = (await auditOf(suite.server, slug)).filter((event) => event.action === "dns.rrset.delete")
    expect(audit).toMatchObject([{ actorId: member.userId, target: zone, data: { zone, name: "www", type: "A" } }])
  })

  it("the serial rises with every change and the SOA carries it", async () => {
    const slug = await newOrg()
    const zone = await createZone(slug)
    const serials = [await serialOf(slug, zone)]
    await put(slug, zone, "www", "A", { records: ["192.0.2.1"] })
    serials.push(await serialOf(slug, zone))
    await put(slug, zone, "www", "A", { records: ["192.0.2.2"] })
    serials.push(await serialOf(slug, zone))
    await api.delete(rrsetOf(slug, zone, "www", "A"), undefined, { token: suite.admin.token })
    serials.push(await serialOf(slug, zone))
    await api.post(`${zoneOf(slug, zone)}/dnssec`, { enabled: true }, { token: suite.admin.token })
    serials.push(await serialOf(slug, zone))
    await api.post(`${zoneOf(slug, zone)}/dnssec`, { enabled: false }, { token: suite.admin.token })
    serials.push(await serialOf(slug, zone))
    for (let index = 1; index < serials.length; index++) expect(serials[index]).toBeGreaterThan(serials[index - 1]!)
    // A refused change leaves it alone.
    await put(slug, zone, "@", "CNAME", { records: ["x.example."] })
    const detail = await api.get(zoneOf(slug, zone), { token: suite.admin.token })
    expect(detail.body.serial).toBe(serials.at(-1))
    expect(detail.body.rrsets[0].records[0]).toContain(` ${serials.at(-1)} 3600 600 1209600 300`)
  })

  it("DNSSEC: enabling makes a key at once (signing, dnskeys, ds); again changes nothing; PUT ds moves to ds_pending; disabling forgets it", async () => {
    const slug = await newOrg()
    const zone = await createZone(slug)
    const dnssec = (enabled: boolean) =>
      api.post(`${zoneOf(slug, zone)}/dnssec`, { enabled }, { token: suite.admin.token })
    const putDs = (ds: unknown) => api.put(`${zoneOf(slug, zone)}/dnssec/ds`, { ds }, { token: suite.admin.token })

    const off = await putDs(["1 13 2 " + "ab".repeat(32)])
    expect({ status: off.status, code: off.body.code }).toEqual({ status: 409, code: "dnssec_off" })

    const on = await dnssec(true)
    expect(on.status).toBe(200)
    expect(on.body.dnssec).toBe("signing")
    expect(on.body.dnskeys).toHaveLength(1)
    expect(on.body.dnskeys[0]).toMatch(/^257 3 13 [A-Za-z0-9+/]{86}==$/)
    expect(on.body.ds).toHaveLength(1)
    const ds = on.body.ds[0] as string
    expect(ds).toMatch(/^\d{1,5} 13 2 [0-9a-f]{64}$/)
    const detail = await api.get(zoneOf(slug, zone), { token: suite.admin.token })
    expect(detail.body).toMatchObject({ dnssec: "signing", dnskeys: on.body.dnskeys, ds: on.body.ds })

    const again = await dnssec(true)
    expect(again.body).toEqual(on.body)

    expect((await putDs(["not a ds"])).status).toBe(400)
    const [tag, , , digest] = ds.split(" ")
    const wrongDigest = await putDs([`${tag} 13 2 ${"0".repeat(64)}`])
    expect({ status: wrongDigest.status, code: wrongDigest.body.code }).toEqual({ status: 400, code: "bad_request" })
    expect((await putDs([`${(Number(tag) + 1) % 65536} 13 2 ${digest}`])).status).toBe(400)
    expect((await putDs([`${tag} 8 2 ${digest}`])).status).toBe(400)

    const empty = await putDs([])
    expect(empty.status).toBe(200)
    expect(empty.body.dnssec).toBe("signing")

    const recorded = await putDs([ds.toUpperCase().replace(" 13 2 ", "  13 2 ")])
    expect(recorded.status).toBe(200)
    expect(recorded.body).toMatchObject({ dnssec: "ds_pending", ds: [ds] })
    expect((await putDs([])).body.dnssec).toBe("ds_pending")
    expect((await dnssec(true)).body.dnssec).toBe("ds_pending")

    const disabled = await dnssec(false)
    expect(disabled.status).toBe(200)
    expect(disabled.body.dnssec).toBe("off")
    expect(disabled.body.dnskeys).toBeUndefined()
    expect(disabled.body.ds).toBeUndefined()
    expect((await putDs([ds])).body.code).toBe("dnssec_off")

    const renewed = await dnssec(true)
    expect(renewed.body.dnssec).toBe("signing")
    expect(renewed.body.dnskeys).not.toEqual(on.body.dnskeys)
    expect((await dnssec("yes" as unknown as boolean)).status).toBe(400)
  })

  it("PUT ds on a zone with DNSSEC off: the body is checked first (a malformed entry 400), a well-formed one is 409 dnssec_off; the state stays off", async () => {
    const slug = await newOrg()
    const zone = await createZone(slug)
    const putDs = (ds: unknown) => api.put(`${zoneOf(slug, zone)}/dnssec/ds`, { ds }, { token: suite.admin.token })
    const replies = [
      await putDs(["not a ds"]),
      await putDs("1 13 2 ab"),
      await putDs([`1 13 2 ${"ab".repeat(32)}`]),
      await putDs([])
    ]
    expect(replies.map((reply) => [reply.status, reply.body.code])).toEqual([
      [400, "bad_request"],
      [400, "bad_request"],
      [409, "dnssec_off"],
      [409, "dnssec_off"]
    ])
    expect((await api.get(zoneOf(slug, zone), { token: suite.admin.token })).body.dnssec).toBe("off")
  })

  it("an org holding zones cannot be deleted: 409 org_not_empty with details.holdings.zones", async () => {
    const slug = await newOrg()
    const name = await createZone(slug)
    const reply = await api.delete(`/v1/orgs/${slug}`, { confirm: slug }, { token: suite.admin.token })
    expect(reply.status).toBe(409)
    expect(reply.body.code).toBe("org_not_empty")
    expect(reply.body.details.holdings).toEqual({ zones: { count: 1, names: [name] } })
    await api.delete(zoneOf(slug, name), undefined, { token: suite.admin.token })
    expect((await api.delete(`/v1/orgs/${slug}`, { confirm: slug }, { token: suite.admin.token })).status).toBe(204)
  })

  it("a domain import creates the org's zone through the DNS area; another org's zone of the name is 409 zone_taken", async () => {
    const slug = await newOrg()
    const name = zoneName()
    const imported = await api.post(`/v1/orgs/${slug}/domains/import`, { name }, { token: suite.admin.token })
    expect(imported.status).toBe(201)
    const zone = await api.get(zoneOf(slug, name), { token: suite.admin.token })
    expect(zone.status).toBe(200)
    expect(zone.body.rrsets.map((rrset: { type: string }) => rrset.type)).toEqual(["SOA", "NS"])
    const other = await newOrg()
    const taken = await api.post(
      `/v1/orgs/${other}/domains/import`,
      { name: `www.${name}` },
      { token: suite.admin.token }
    )
    expect(taken.status).toBe(409)
  })

  const zoneFixture = async (slug: string) => {
    const zone = await createZone(slug)
    await put(slug, zone, "www", "A", { records: ["192.0.2.1"] })
    return zone
  }
  itChecksRoles(suite, {
    name: "GET zones",
    min: "viewer",
    request: (slug) => ({ method: "GET", path: zonesOf(slug) }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "POST zones",
    min: "admin",
    request: (slug) => ({ method: "POST", path: zonesOf(slug), body: { name: zoneName() } }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "GET zone",
    min: "viewer",
    setup: zoneFixture,
    request: (slug, zone) => ({ method: "GET", path: zoneOf(slug, zone) }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "DELETE zone",
    min: "admin",
    request: async (slug) => ({ method: "DELETE", path: zoneOf(slug, await createZone(slug)) }),
    ok: 204
  })
  itChecksRoles(suite, {
    name: "PUT rrset",
    min: "member",
    setup: zoneFixture,
    request: (slug, zone) => ({
      method: "PUT",
      path: rrsetOf(slug, zone, "www", "A"),
      body: { records: ["192.0.2.9"] }
    }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "DELETE rrset",
    min: "member",
    setup: zoneFixture,
    request: async (slug, zone) => {
      const name = unique("h")
      await put(slug, zone, name, "TXT", { records: ["x"] })
      return { method: "DELETE", path: rrsetOf(slug, zone, name, "TXT") }
    },
    ok: 204
  })
  itChecksRoles(suite, {
    name: "POST dnssec",
    min: "admin",
    setup: zoneFixture,
    request: (slug, zone) => ({ method: "POST", path: `${zoneOf(slug, zone)}/dnssec`, body: { enabled: true } }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "PUT dnssec/ds",
    min: "admin",
    setup: async (slug) => {
      const zone = await zoneFixture(slug)
      await api.post(`${zoneOf(slug, zone)}/dnssec`, { enabled: true }, { token: suite.admin.token })
      return zone
    },
    request: (slug, zone) => ({ method: "PUT", path: `${zoneOf(slug, zone)}/dnssec/ds`, body: { ds: [] } }),
    ok: 200
  })
})

describe.each(backends)("spec 4.14 with SERVICE_DNS_LISTEN=off (%s)", (_name, stores) => {
  const suite = useSuite(stores, { dns: { listen: "off" } })

  it("every zone operation is 503 dns_not_configured (after authorization and validation)", async () => {
    const slug = await suite.newOrg()
    const token = suite.admin.token
    const base = `/v1/orgs/${slug}/dns/zones`
    const replies = [
      await suite.api.get(base, { token }),
      await suite.api.post(base, { name: "off.example" }, { token }),
      await suite.api.get(`${base}/off.example`, { token }),
      await suite.api.delete(`${base}/off.example`, undefined, { token }),
      await suite.api.put(`${base}/off.example/rrsets/www/A`, { records: ["192.0.2.1"] }, { token }),
      await suite.api.delete(`${base}/off.example/rrsets/www/A`, undefined, { token }),
      await suite.api.post(`${base}/off.example/dnssec`, { enabled: true }, { token }),
      await suite.api.put(`${base}/off.example/dnssec/ds`, { ds: [] }, { token })
    ]
    expect(replies.map((reply) => [reply.status, reply.body.code])).toEqual(
      replies.map(() => [503, "dns_not_configured"])
    )
    expect((await suite.api.get(base, { token: suite.outsider.token })).status).toBe(404)
    expect((await suite.api.post(base, { name: "" }, { token })).status).toBe(400)
  })
})
