import * as DnsResolverUdp from "@hostplane/adapters-providers/dns/DnsResolverUdp"
import { Hostnames, Jobs, Orgs, Projects, services } from "@hostplane/core"
import { bundleOf, manifestEntry } from "@hostplane/testkit"
import { FakeDnsServer } from "@hostplane/testkit/dns/FakeDnsServer"
import { Duration, Effect, Layer, Option } from "effect"
import * as Http from "node:http"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { hostileBodies, sendRaw } from "./support/HostileBodies.ts"
import { auditOf, unique, useSuite } from "./support/TestServer.ts"

const fallbackOrigin = "fallback.apps.localhost"

describe.each(backends)("spec 4.4 custom hostnames (%s)", (_name, stores) => {
  // The server asks a FakeDnsServer over real loopback UDP; it lives as long as the server.
  let fake: FakeDnsServer["Service"]
  const dns = Layer.unwrap(
    Effect.gen(function* () {
      fake = yield* FakeDnsServer.make()
      return Layer.merge(
        DnsResolverUdp.layer({ servers: [fake.address], timeout: Duration.seconds(2), attempts: 1 }),
        Hostnames.HostedZones.layerNone
      )
    })
  )
  const suite = useSuite(stores, {}, undefined, dns)
  const { api, newOrg, withRole } = suite

  const newProject = async (slug: string) => (await suite.newProject(slug)).name
  const base = (slug: string, project: string) => `/v1/orgs/${slug}/projects/${project}/hostnames`
  const add = (slug: string, project: string, name: string, token = suite.admin.token) =>
    api.post(base(slug, project), { name }, { token })
  const customName = () => `www.${unique("shop")}.example`
  const routeOf = (host: string) =>
    suite.server.run(
      Effect.flatMap(Effect.service(Hostnames.Hostnames), (hostnames) => hostnames.routeOf(host)).pipe(
        Effect.provide(services)
      )
    )
  const idsOf = (slug: string, project: string) =>
    suite.server.run(
      Effect.gen(function* () {
        const org = Option.getOrThrow(yield* (yield* Orgs.OrgStore).findBySlug(slug))
        const row = Option.getOrThrow(yield* (yield* Projects.ProjectStore).findByName(org.id, project))
        return { projectId: row.id, orgId: org.id }
      })
    )
  const runner = () => suite.server.run(Jobs.JobRunner.runOnce([Hostnames.hostnameCheckHandler], { concurrency: 100 }))
  const txtQueriesFor = (names: ReadonlyArray<string>) =>
    Effect.runPromise(
      Effect.map(fake.queries, (queries) =>
        names.map((name) => queries.filter((q) => q.type === "TXT" && q.name === `_service-verify.${name}`).length)
      )
    )
  const setDns = (effect: Effect.Effect<void>) => Effect.runPromise(effect)

  it("GET hostnames (viewer) lists the default hostname: kind default, active, verify null, cname the fallback origin", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const viewer = await withRole(slug, "viewer")
    const reply = await api.get(base(slug, project), { token: viewer.token })
    expect(reply.status).toBe(200)
    expect(reply.body.items).toHaveLength(1)
    const [row] = reply.body.items
    expect(Object.keys(row).sort()).toEqual(
      ["cname", "createdAt", "kind", "lastError", "name", "status", "verifiedAt", "verify", "tls"].sort()
    )
    expect(row).toMatchObject({
      name: `${project}.apps.localhost`,
      kind: "default",
      status: "active",
      verify: null,
      cname: fallbackOrigin,
      lastError: null,
      // Without a TLS listener (no static certificate, ACME off) no certificate is sought (decisions.md part 16).
      tls: { status: "none", expiresAt: null, lastError: null }
    })
    expect(row.verifiedAt).toBe(row.createdAt)
  })

  it("POST hostnames (member) is 200 Hostname: normalized, pending_dns with a random TXT record; audit hostname.add", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const member = await withRole(slug, "member")
    const name = customName()
    const reply = await add(slug, project, `  ${name.toUpperCase()}. `, member.token)
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({
      name,
      kind: "custom",
      status: "pending_dns",
      verify: { type: "TXT", name: `_service-verify.${name}` },
      cname: fallbackOrigin,
      lastError: null,
      verifiedAt: null
    })
    expect(reply.body.verify.value).toMatch(/^service-verify=[A-Za-z0-9_-]{20,}$/)
    const other = await add(slug, project, customName(), member.token)
    expect(other.body.verify.value).not.toBe(reply.body.verify.value)

    const idn = await add(slug, project, `Bücher-${unique("x")}.Example`, member.token)
    expect(idn.status).toBe(200)
    expect(idn.body.name).toMatch(/^xn--bcher-.*\.example$/)

    const list = await api.get(base(slug, project), { token: member.token })
    expect(list.body.items.map((item: { name: string }) => item.name)).toEqual([
      `${project}.apps.localhost`,
      name,
      other.body.name,
      idn.body.name
    ])
    const audit = (await auditOf(suite.server, slug)).filter((event) => event.action === "hostname.add")
    expect(audit).toHaveLength(3)
    expect(audit[0]).toMatchObject({ actorId: member.userId, data: { project, hostname: name } })
    expect(JSON.stringify(audit)).not.toContain(reply.body.verify.value)
  })

  it("the same project adding the same name again gets the existing row unchanged (200, audited once)", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const name = customName()
    const first = await add(slug, project, name)
    const again = await add(slug, project, name.toUpperCase())
    expect(again.status).toBe(200)
    expect(again.body).toEqual(first.body)
    const audit = (await auditOf(suite.server, slug)).filter((event) => event.action === "hostname.add")
    expect(audit).toHaveLength(1)
  })

  it("a name held by another project, in any org, default or custom, is 409 hostname_taken", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const sibling = await newProject(slug)
    const otherOrg = await newOrg()
    const foreign = await newProject(otherOrg)
    const name = customName()
    expect((await add(slug, project, name)).status).toBe(200)
    for (const [org, target, host] of [
      [slug, sibling, name],
      [otherOrg, foreign, name],
      [otherOrg, foreign, name.toUpperCase()]
    ] as const) {
      const reply = await add(org, target, host)
      expect(reply.status).toBe(409)
      expect(reply.body.code).toBe("hostname_taken")
    }
    // A default hostname is a name under the app domain, refused before the uniqueness check.
    const onDefault = await add(otherOrg, foreign, `${project}.apps.localhost`)
    expect(onDefault.status).toBe(400)
    expect((await api.get(base(otherOrg, foreign), { token: suite.admin.token })).body.items).toHaveLength(1)
  })

  it("projects of four orgs adding the same name at the same moment: one 200, three 409 hostname_taken, one row", async () => {
    for (let round = 0; round < 3; round++) {
      const orgs = await Promise.all([newOrg(), newOrg(), newOrg(), newOrg()])
      const projects = await Promise.all(orgs.map((slug) => newProject(slug)))
      const name = customName()
      const replies = await Promise.all(orgs.map((slug, index) => add(slug, projects[index]!, name)))
      const outcome = replies.map((reply) => [reply.status, reply.body.code ?? null])
      expect([...outcome].sort()).toEqual([
        [200, null],
        [409, "hostname_taken"],
        [409, "hostname_taken"],
        [409, "hostname_taken"]
      ])
      const holders = await Promise.all(
        orgs.map(async (slug, index) =>
          (await api.get(base(slug, projects[index]!), { token: suite.admin.token })).body.items.filter(
            (item: { name: string }) => item.name === name
          )
        )
      )
      expect(holders.flat()).toHaveLength(1)
    }
  })

  it("wildcards, names under the service's own domains and invalid shapes are 400 bad_request", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["*.example.com", "wildcard"],
      ["shop.apps.localhost", "service_domain"],
      ["apps.localhost", "service_domain"],
      [fallbackOrigin, "service_domain"],
      ["localhost", "single_label"],
      ["192.0.2.1", "ip_address"],
      ["exa mple.com", "invalid_character"],
      ["-bad.example.com", "hyphen"],
      ["", "empty"]
    ]
    for (const [name, reason] of cases) {
      const reply = await add(slug, project, name)
      expect(reply.status, name).toBe(400)
      expect(reply.body.code).toBe("bad_request")
      expect(reply.body.details.reason).toBe(reason)
    }
    const noName = await api.post(base(slug, project), {}, { token: suite.admin.token })
    expect(noName.status).toBe(400)
    expect(noName.body.code).toBe("bad_request")
    expect((await api.get(base(slug, project), { token: suite.admin.token })).body.items).toHaveLength(1)
  })

  /** The project, and a custom name of its own for each caller that deletes or verifies one. */
  const withCustomName = async (slug: string, project: string) => {
    const name = customName()
    expect((await add(slug, project, name)).status).toBe(200)
    return `${base(slug, project)}/${name}`
  }
  itChecksRoles(suite, {
    name: "GET hostnames",
    min: "viewer",
    setup: newProject,
    request: (slug, project) => ({ method: "GET", path: base(slug, project) }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "POST hostnames",
    min: "member",
    setup: newProject,
    request: (slug, project) => ({ method: "POST", path: base(slug, project), body: { name: customName() } }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "DELETE hostname",
    min: "member",
    setup: newProject,
    request: async (slug, project) => ({ method: "DELETE", path: await withCustomName(slug, project) }),
    ok: 204
  })
  itChecksRoles(suite, {
    name: "POST hostname verify",
    min: "member",
    setup: newProject,
    request: async (slug, project) => ({ method: "POST", path: `${await withCustomName(slug, project)}/verify` }),
    ok: 200
  })

  it("an unknown project is 404 for list and add", async () => {
    const slug = await newOrg()
    for (const reply of [
      await api.get(base(slug, "missing"), { token: suite.admin.token }),
      await add(slug, "missing", customName())
    ]) {
      expect(reply.status).toBe(404)
      expect(reply.body.code).toBe("not_found")
    }
  })

  it("POST on a project being deleted: outsider 404, viewer 403, a bad name 400, then 409 op_in_flight; nothing added", async () => {
    // decisions.md part 12: authorization (404, 403), then the input (400), then the resource's state (409).
    const slug = await newOrg()
    const project = await newProject(slug)
    const viewer = await withRole(slug, "viewer")
    expect(
      (await api.delete(`/v1/orgs/${slug}/projects/${project}`, { confirm: project }, { token: suite.admin.token }))
        .status
    ).toBe(202)
    const audited = (await auditOf(suite.server, slug)).length
    const name = customName()
    const answers = [
      await add(slug, project, name, suite.outsider.token),
      await add(slug, project, "*.wild.example", viewer.token),
      await add(slug, project, "*.wild.example"),
      await add(slug, project, "not a name"),
      await add(slug, project, name)
    ]
    expect(answers.map((reply) => [reply.status, reply.body.code])).toEqual([
      [404, "not_found"],
      [403, "forbidden"],
      [400, "bad_request"],
      [400, "bad_request"],
      [409, "op_in_flight"]
    ])
    expect((await auditOf(suite.server, slug)).length).toBe(audited)
    expect(await routeOf(name)).toEqual(Option.none())
  })

  it("hostile bodies on POST hostnames (malformed, not UTF-8, NUL, lone surrogate, array, 3 MiB) are 400 or 413, and add nothing", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    for (const [what, body, status, code] of hostileBodies(JSON.stringify({ name: customName() }))) {
      const reply = await sendRaw(`${suite.server.url}${base(slug, project)}`, "POST", suite.admin.token, body)
      expect({ what, status: reply.status, code: reply.code }).toEqual({ what, status, code })
    }
    const list = await api.get(base(slug, project), { token: suite.admin.token })
    expect(list.body.items.map((item: { kind: string }) => item.kind)).toEqual(["default"])
    expect((await auditOf(suite.server, slug)).filter((event) => event.action === "hostname.add")).toEqual([])
  })

  it("DELETE: the default hostname is 400; unknown and other projects' names 404; a custom name 204, audited", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const sibling = await newProject(slug)
    const member = await withRole(slug, "member")
    const name = customName()
    const theirs = customName()
    await add(slug, project, name)
    await add(slug, sibling, theirs)

    const onDefault = await api.delete(`${base(slug, project)}/${project}.apps.localhost`, undefined, {
      token: member.token
    })
    expect(onDefault.status).toBe(400)
    expect(onDefault.body.code).toBe("bad_request")
    for (const host of [customName(), theirs]) {
      const reply = await api.delete(`${base(slug, project)}/${host}`, undefined, { token: member.token })
      expect(reply.status).toBe(404)
    }

    const removed = await api.delete(`${base(slug, project)}/${name.toUpperCase()}`, undefined, { token: member.token })
    expect(removed.status).toBe(204)
    const list = await api.get(base(slug, project), { token: member.token })
    expect(list.body.items.map((item: { name: string }) => item.name)).toEqual([`${project}.apps.localhost`])
    expect((await api.delete(`${base(slug, project)}/${name}`, undefined, { token: member.token })).status).toBe(404)
    const audit = (await auditOf(suite.server, slug)).filter((event) => event.action === "hostname.delete")
    expect(audit).toHaveLength(1)
    expect(audit[0]).toMatchObject({ actorId: member.userId, data: { project, hostname: name } })
    // The name is free again, for any org.
    const otherOrg = await newOrg()
    expect((await add(otherOrg, await newProject(otherOrg), name)).status).toBe(200)
  })

  it("verify with the TXT record _service-verify.<host> makes the name active and routed", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const member = await withRole(slug, "member")
    const name = customName()
    const added = (await add(slug, project, name)).body
    expect(await routeOf(name)).toEqual(Option.none())
    await setDns(fake.set(added.verify.name, "TXT", ["unrelated", added.verify.value]))

    const reply = await api.post(`${base(slug, project)}/${name}/verify`, undefined, { token: member.token })
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({ name, status: "active", lastError: null, verify: added.verify })
    expect(Date.parse(reply.body.verifiedAt)).toBeGreaterThanOrEqual(Date.parse(added.createdAt))
    expect(await routeOf(name)).toEqual(Option.some(await idsOf(slug, project)))
    expect(await routeOf(`${name.toUpperCase()}.`)).toEqual(Option.some(await idsOf(slug, project)))

    // An active name is answered unchanged.
    const again = await api.post(`${base(slug, project)}/${name}/verify`, undefined, { token: member.token })
    expect(again.body).toEqual(reply.body)
  })

  it("verify of a name another project holds (same org or another org) is 404 and leaves that name pending_dns", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const sibling = await newProject(slug)
    const otherOrg = await newOrg()
    const foreign = await newProject(otherOrg)
    const member = await withRole(slug, "member")
    for (const [owner, holder] of [
      [slug, sibling],
      [otherOrg, foreign]
    ] as const) {
      const name = customName()
      const added = (await add(owner, holder, name)).body
      // Proof is in place: only the ownership of the name may refuse the verify.
      await setDns(fake.set(added.verify.name, "TXT", [added.verify.value]))
      const reply = await api.post(`${base(slug, project)}/${name}/verify`, undefined, { token: member.token })
      expect({ name, status: reply.status, code: reply.body.code }).toEqual({ name, status: 404, code: "not_found" })
      const held = await api.get(base(owner, holder), { token: suite.admin.token })
      expect(held.body.items.find((item: { name: string }) => item.name === name)).toMatchObject({
        status: "pending_dns",
        lastError: null,
        verifiedAt: null
      })
      expect(await routeOf(name)).toEqual(Option.none())
    }
  })

  it("through the edge: a pending_dns name is 404 unknown_hostname; once verified it serves the project; once deleted it is 404 unknown_hostname again", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const bundle = await Effect.runPromise(
      bundleOf([manifestEntry({ name: "site" }), { name: "assets/index.html", content: "<h1>custom</h1>" }])
    )
    const uploaded = await fetch(`${suite.server.url}/v1/orgs/${slug}/projects/${project}/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${suite.admin.token}`, "content-type": "application/gzip" },
      body: bundle
    })
    expect(uploaded.status).toBe(201)
    const edge = (host: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const url = new URL(suite.server.edgeUrl)
        const request = Http.request(
          { host: url.hostname, port: url.port, path: "/", headers: { host } },
          (response) => {
            const chunks: Array<Buffer> = []
            response.on("data", (chunk: Buffer) => chunks.push(chunk))
            response.on("end", () => resolve({ status: response.statusCode!, body: Buffer.concat(chunks).toString() }))
          }
        )
        request.on("error", reject)
        request.end()
      })
    const name = customName()
    const added = (await add(slug, project, name)).body
    const pending = await edge(name)
    expect([pending.status, JSON.parse(pending.body).code]).toEqual([404, "unknown_hostname"])
    await setDns(fake.set(added.verify.name, "TXT", [added.verify.value]))
    const verified = await api.post(`${base(slug, project)}/${name}/verify`, undefined, { token: suite.admin.token })
    expect(verified.body.status).toBe("active")
    expect(await edge(name)).toEqual({ status: 200, body: "<h1>custom</h1>" })
    expect((await api.delete(`${base(slug, project)}/${name}`, undefined, { token: suite.admin.token })).status).toBe(
      204
    )
    const deleted = await edge(name)
    expect([deleted.status, JSON.parse(deleted.body).code]).toEqual([404, "unknown_hostname"])
  })

  it("verify with a CNAME of <host> to the fallback origin makes the name active", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const name = customName()
    await add(slug, project, name)
    await setDns(fake.set(name, "CNAME", [`${fallbackOrigin.toUpperCase()}.`]))
    const reply = await api.post(`${base(slug, project)}/${name}/verify`, undefined, { token: suite.admin.token })
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({ status: "active", lastError: null })
    expect(await routeOf(name)).toEqual(Option.some(await idsOf(slug, project)))
  })

  it("verify with a wrong TXT record keeps pending_dns, lastError says what was observed, and the name is not routed", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const name = customName()
    const added = (await add(slug, project, name)).body
    await setDns(fake.set(added.verify.name, "TXT", ["service-verify=not-the-token"]))
    await setDns(fake.set(name, "CNAME", ["elsewhere.example.net"]))
    const reply = await api.post(`${base(slug, project)}/${name}/verify`, undefined, { token: suite.admin.token })
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({ status: "pending_dns", verifiedAt: null })
    expect(reply.body.lastError).toContain('"service-verify=not-the-token"')
    expect(reply.body.lastError).toContain(added.verify.value)
    expect(reply.body.lastError).toContain("elsewhere.example.net")
    expect(reply.body.lastError).toContain(fallbackOrigin)
    expect(await routeOf(name)).toEqual(Option.none())
    const list = await api.get(base(slug, project), { token: suite.admin.token })
    expect(list.body.items[1]).toEqual(reply.body)

    // Once the record is right, a later verify passes and clears lastError.
    await setDns(fake.set(added.verify.name, "TXT", [added.verify.value]))
    const fixed = await api.post(`${base(slug, project)}/${name}/verify`, undefined, { token: suite.admin.token })
    expect(fixed.body).toMatchObject({ status: "active", lastError: null })
  })

  it("verify while the name's DNS fails (SERVFAIL, REFUSED) is still 200: pending_dns, lastError names the failure", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    for (const rcode of ["SERVFAIL", "REFUSED"] as const) {
      const name = customName()
      const added = (await add(slug, project, name)).body
      await setDns(fake.setRcode(added.verify.name, rcode))
      await setDns(fake.setRcode(name, rcode))
      const reply = await api.post(`${base(slug, project)}/${name}/verify`, undefined, { token: suite.admin.token })
      expect({ rcode, status: reply.status, state: reply.body.status }).toEqual({
        rcode,
        status: 200,
        state: "pending_dns"
      })
      expect(reply.body.lastError).toContain(rcode)
      expect(await routeOf(name)).toEqual(Option.none())
    }
  })

  it("routeOf answers active names only: unknown and pending names are none, the default hostname routes", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const name = customName()
    await add(slug, project, name)
    expect(await routeOf(customName())).toEqual(Option.none())
    expect(await routeOf(name)).toEqual(Option.none())
    expect(await routeOf(`${project}.apps.localhost`)).toEqual(Option.some(await idsOf(slug, project)))
  })

  it("the background check verifies pending names (the edge routes them) and records lastError on the others", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const proven = customName()
    const unproven = customName()
    const added = (await add(slug, project, proven)).body
    await add(slug, project, unproven)
    await setDns(fake.set(added.verify.name, "TXT", [added.verify.value]))

    expect(await runner()).toBeGreaterThanOrEqual(2)
    const items = (await api.get(base(slug, project), { token: suite.admin.token })).body.items
    const byName = new Map(items.map((item: { name: string }) => [item.name, item]))
    expect(byName.get(proven)).toMatchObject({ status: "active", lastError: null })
    expect(byName.get(unproven)).toMatchObject({ status: "pending_dns" })
    expect((byName.get(unproven) as { lastError: string }).lastError).toContain("NXDOMAIN")
    expect(await routeOf(proven)).toEqual(Option.some(await idsOf(slug, project)))
    expect(await routeOf(unproven)).toEqual(Option.none())
  })

  it("two runners at once check each pending name once per cycle; the next run of the cycle checks none again", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const names = Array.from({ length: 8 }, customName)
    for (const name of names) expect((await add(slug, project, name)).status).toBe(200)

    const before = await txtQueriesFor(names)
    const [first, second] = await Promise.all([runner(), runner()])
    expect(first + second).toBeGreaterThanOrEqual(names.length)
    const after = await txtQueriesFor(names)
    expect(after.map((count, i) => count - (before[i] ?? 0))).toEqual(names.map(() => 1))

    await runner()
    expect(await txtQueriesFor(names)).toEqual(after)
  })
})
