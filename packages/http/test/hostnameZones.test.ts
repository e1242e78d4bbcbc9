import { Dns, Jobs, Projects } from "@hostplane/core"
import { dnsNone } from "@hostplane/testkit/dns/DnsNone"
import { Layer } from "effect"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { unique, useSuite } from "./support/TestServer.ts"

const fallback = "fallback.apps.localhost."

/**
 * Spec 4.4 "the name is in the service's zone and the org matches", with the DNS area's hosted zones: such a name
 * verifies by zone, and the service keeps a managed CNAME to the fallback origin for it while the hostname exists.
 */
describe.each(backends)("custom hostnames in the org's own zone (%s)", (_name, stores) => {
  // No name resolves through DNS lookups, so only the zone can prove a name here.
  const suite = useSuite(stores, {}, undefined, Layer.merge(dnsNone, Dns.HostedZonesDns.layer))
  const { api, newOrg } = suite

  const newZone = async (slug: string) => {
    const zone = `${unique("zone")}.example`
    expect((await api.post(`/v1/orgs/${slug}/dns/zones`, { name: zone }, { token: suite.admin.token })).status).toBe(
      200
    )
    return zone
  }
  const zoneDetail = async (slug: string, zone: string) =>
    (await api.get(`/v1/orgs/${slug}/dns/zones/${zone}`, { token: suite.admin.token })).body
  const hostnames = (slug: string, project: string) => `/v1/orgs/${slug}/projects/${project}/hostnames`
  const addHost = (slug: string, project: string, name: string) =>
    api.post(hostnames(slug, project), { name }, { token: suite.admin.token })
  const rrsetAt = async (slug: string, zone: string, name: string) =>
    (await zoneDetail(slug, zone)).rrsets.filter((rrset: { name: string }) => rrset.name === name)

  it("a name below the org's zone gets a managed CNAME to the fallback origin, verifies by zone, and the CNAME is closed to users", async () => {
    const slug = await newOrg()
    const project = (await suite.newProject(slug)).name
    const zone = await newZone(slug)
    const before = (await zoneDetail(slug, zone)).serial
    const added = await addHost(slug, project, `www.${zone}`)
    expect(added.status).toBe(200)
    expect(added.body.status).toBe("pending_dns")
    expect(await rrsetAt(slug, zone, "www")).toEqual([
      { name: "www", type: "CNAME", ttl: 300, records: [fallback], managed_by: "system" }
    ])
    expect((await zoneDetail(slug, zone)).serial).toBeGreaterThan(before)

    const verified = await api.post(`${hostnames(slug, project)}/www.${zone}/verify`, {}, { token: suite.admin.token })
    expect(verified.status).toBe(200)
    expect(verified.body).toMatchObject({ status: "active", lastError: null })

    const rrset = `/v1/orgs/${slug}/dns/zones/${zone}/rrsets/www`
    const put = await api.put(`${rrset}/CNAME`, { records: ["elsewhere.example."] }, { token: suite.admin.token })
    expect(put.status).toBe(409)
    expect(put.body.code).toBe("managed_rrset")
    const removed = await api.delete(`${rrset}/CNAME`, undefined, { token: suite.admin.token })
    expect(removed.status).toBe(409)
    expect(removed.body.code).toBe("managed_rrset")
    const beside = await api.put(`${rrset}/TXT`, { records: ["hello"] }, { token: suite.admin.token })
    expect(beside.status).toBe(409)
    expect(beside.body.code).toBe("cname_conflict")
  })

  it("deleting the hostname removes its managed record and raises the serial", async () => {
    const slug = await newOrg()
    const project = (await suite.newProject(slug)).name
    const zone = await newZone(slug)
    expect((await addHost(slug, project, `shop.${zone}`)).status).toBe(200)
    const before = (await zoneDetail(slug, zone)).serial
    const deleted = await api.delete(`${hostnames(slug, project)}/shop.${zone}`, undefined, {
      token: suite.admin.token
    })
    expect(deleted.status).toBe(204)
    expect(await rrsetAt(slug, zone, "shop")).toEqual([])
    expect((await zoneDetail(slug, zone)).serial).toBeGreaterThan(before)
    // The name is free again for the user's own records.
    const own = await api.put(
      `/v1/orgs/${slug}/dns/zones/${zone}/rrsets/shop/CNAME`,
      { records: ["elsewhere.example."] },
      { token: suite.admin.token }
    )
    expect(own.status).toBe(200)
  })

  it("a project delete removes the managed records of its hostnames", async () => {
    const slug = await newOrg()
    const project = (await suite.newProject(slug)).name
    const zone = await newZone(slug)
    expect((await addHost(slug, project, `app.${zone}`)).status).toBe(200)
    expect(await rrsetAt(slug, zone, "app")).toHaveLength(1)
    const started = await api.delete(
      `/v1/orgs/${slug}/projects/${project}`,
      { confirm: project },
      {
        token: suite.admin.token
      }
    )
    expect(started.status).toBe(202)
    await suite.server.run(Jobs.JobRunner.runOnce([Projects.projectDeleteHandler]))
    expect(await rrsetAt(slug, zone, "app")).toEqual([])
  })

  it("the user's own records at the name are kept (no managed record), and the name still verifies by zone", async () => {
    const slug = await newOrg()
    const project = (await suite.newProject(slug)).name
    const zone = await newZone(slug)
    const own = await api.put(
      `/v1/orgs/${slug}/dns/zones/${zone}/rrsets/api/A`,
      { records: ["192.0.2.10"] },
      { token: suite.admin.token }
    )
    expect(own.status).toBe(200)
    expect((await addHost(slug, project, `api.${zone}`)).status).toBe(200)
    expect(await rrsetAt(slug, zone, "api")).toEqual([
      { name: "api", type: "A", ttl: 300, records: ["192.0.2.10"], managed_by: null }
    ])
    const verified = await api.post(`${hostnames(slug, project)}/api.${zone}/verify`, {}, { token: suite.admin.token })
    expect(verified.body.status).toBe("active")
    // Deleting the hostname leaves the user's record alone.
    await api.delete(`${hostnames(slug, project)}/api.${zone}`, undefined, { token: suite.admin.token })
    expect(await rrsetAt(slug, zone, "api")).toHaveLength(1)
  })

  it("the zone apex verifies by zone and gets no record (a CNAME cannot sit at the apex)", async () => {
    const slug = await newOrg()
    const project = (await suite.newProject(slug)).name
    const zone = await newZone(slug)
    const before = await zoneDetail(slug, zone)
    expect((await addHost(slug, project, zone)).status).toBe(200)
    expect((await zoneDetail(slug, zone)).rrsets).toEqual(before.rrsets)
    const verified = await api.post(`${hostnames(slug, project)}/${zone}/verify`, {}, { token: suite.admin.token })
    expect(verified.body.status).toBe("active")
  })

  it("a name in another org's zone gets no record and does not verify", async () => {
    const owner = await newOrg()
    const zone = await newZone(owner)
    const slug = await newOrg()
    const project = (await suite.newProject(slug)).name
    expect((await addHost(slug, project, `www.${zone}`)).status).toBe(200)
    expect(await rrsetAt(owner, zone, "www")).toEqual([])
    const verified = await api.post(`${hostnames(slug, project)}/www.${zone}/verify`, {}, { token: suite.admin.token })
    expect(verified.status).toBe(200)
    expect(verified.body.status).toBe("pending_dns")
  })
})
