import * as DnsResolverUdp from "@hostplane/adapters-providers/dns/DnsResolverUdp"
import { Hostnames, Jobs, Kernel, Projects } from "@hostplane/core"
import { bundleOf, sampleEntries } from "@hostplane/testkit/deployments/BundleFixtures"
import { FakeDnsServer } from "@hostplane/testkit/dns/FakeDnsServer"
import { Duration, Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { type Reply, unique, useSuite } from "./support/TestServer.ts"

// decisions.md part 6: the node revision rises with every change a node must apply, once per change, and a refused
// write leaves it where it was. Tests in this file run one after another, so the global revision moves only by them.
describe.each(backends)("node revision (%s)", (_name, stores) => {
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
  const { api, newOrg } = suite
  const base = (slug: string, project: string) => `/v1/orgs/${slug}/projects/${project}`

  /** The latest revision and the changed projects' stamps. */
  const revisions = () =>
    suite.server.run(Effect.flatMap(Effect.service(Kernel.NodeRevisions), (node) => node.changedAfter(0, 100_000)))

  /**
   * Runs `write`, expects `status`, and answers how far the revision moved; a raise must stamp `projectId` with the
   * latest revision.
   */
  const moved = async (projectId: Kernel.ProjectId, status: number, write: () => Promise<Reply>) => {
    const before = await revisions()
    const reply = await write()
    expect({ status: reply.status, body: reply.body }).toMatchObject({ status })
    const after = await revisions()
    if (after.revision > before.revision) {
      expect(after.projects.at(-1)).toEqual({ projectId, revision: after.revision })
    }
    return after.revision - before.revision
  }

  const upload = async (slug: string, project: string, files = sampleEntries): Promise<Reply> => {
    const response = await fetch(`${suite.server.url}${base(slug, project)}/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${suite.admin.token}`, "content-type": "application/gzip" },
      body: await Effect.runPromise(bundleOf(files))
    })
    return { status: response.status, headers: response.headers, body: await response.json() }
  }

  const fresh = async () => {
    const slug = await newOrg()
    const project = await suite.newProject(slug)
    return { slug, name: project.name, id: project.id }
  }

  it("a deploy raises it once; a refused upload does not", async () => {
    const { slug, name, id } = await fresh()
    expect(await moved(id, 201, () => upload(slug, name))).toBe(1)
    const broken = () =>
      fetch(`${suite.server.url}${base(slug, name)}/deployments`, {
        method: "POST",
        headers: { authorization: `Bearer ${suite.admin.token}`, "content-type": "application/gzip" },
        body: "not a gzip stream"
      }).then(async (response) => ({ status: response.status, headers: response.headers, body: await response.json() }))
    expect(await moved(id, 400, broken)).toBe(0)
  })

  it("a rollback raises it once; a rollback to the live deployment or an unknown one does not", async () => {
    const { slug, name, id } = await fresh()
    const first = await upload(slug, name)
    const second = await upload(slug, name)
    expect(second.status).toBe(201)
    const rollback = (deploymentId: string) => () =>
      api.post(`${base(slug, name)}/rollback`, { deploymentId }, { token: suite.admin.token })
    expect(await moved(id, 200, rollback(first.body.id))).toBe(1)
    expect(await moved(id, 200, rollback(first.body.id))).toBe(0)
    expect(await moved(id, 404, rollback("dep_unknown"))).toBe(0)
  })

  it("a secret put and delete raise it once each; a refused put or a delete of nothing does not", async () => {
    const { slug, name, id } = await fresh()
    const secrets = `${base(slug, name)}/secrets`
    const token = suite.admin.token
    expect(await moved(id, 200, () => api.put(`${secrets}/API_KEY`, { value: "v1" }, { token }))).toBe(1)
    expect(await moved(id, 200, () => api.put(`${secrets}/API_KEY`, { value: "v2" }, { token }))).toBe(1)
    expect(await moved(id, 400, () => api.put(`${secrets}/DB`, { value: "v" }, { token }))).toBe(0)
    expect(await moved(id, 204, () => api.delete(`${secrets}/API_KEY`, undefined, { token }))).toBe(1)
    expect(await moved(id, 404, () => api.delete(`${secrets}/API_KEY`, undefined, { token }))).toBe(0)
  })

  it("a hostname add, verify and delete raise it once each; a repeat, a failed proof or a refused add do not", async () => {
    const { slug, name, id } = await fresh()
    const hostnames = `${base(slug, name)}/hostnames`
    const token = suite.admin.token
    const host = `www.${unique("shop")}.example`
    let added: Reply | undefined
    expect(
      await moved(id, 200, async () => {
        added = await api.post(hostnames, { name: host }, { token })
        return added
      })
    ).toBe(1)
    expect(await moved(id, 200, () => api.post(hostnames, { name: host }, { token }))).toBe(0)
    expect(await moved(id, 400, () => api.post(hostnames, { name: "not a name" }, { token }))).toBe(0)
    const verify = () => api.post(`${hostnames}/${host}/verify`, undefined, { token })
    expect(await moved(id, 200, verify)).toBe(0)
    await Effect.runPromise(fake.set(added?.body.verify.name, "TXT", [added?.body.verify.value]))
    expect(await moved(id, 200, verify)).toBe(1)
    expect(await moved(id, 200, verify)).toBe(0)
    expect(await moved(id, 204, () => api.delete(`${hostnames}/${host}`, undefined, { token }))).toBe(1)
    expect(await moved(id, 404, () => api.delete(`${hostnames}/${host}`, undefined, { token }))).toBe(0)
  })

  it("the background check raises it once when it proves a name", async () => {
    const { slug, name, id } = await fresh()
    const host = `www.${unique("shop")}.example`
    const added = await api.post(`${base(slug, name)}/hostnames`, { name: host }, { token: suite.admin.token })
    await Effect.runPromise(fake.set(added.body.verify.name, "TXT", [added.body.verify.value]))
    const check = async (): Promise<Reply> => {
      await suite.server.run(Jobs.JobRunner.runOnce([Hostnames.hostnameCheckHandler], { concurrency: 100 }))
      return { status: 200, headers: new Headers(), body: null }
    }
    expect(await moved(id, 200, check)).toBe(1)
    expect(await moved(id, 200, check)).toBe(0)
  })

  it("an access policy change raises it once; a refused one and the bypass secret do not", async () => {
    const { slug, name, id } = await fresh()
    const access = `${base(slug, name)}/access`
    const token = suite.admin.token
    expect(await moved(id, 200, () => api.put(access, { mode: "org" }, { token }))).toBe(1)
    expect(await moved(id, 400, () => api.put(access, { mode: "password" }, { token }))).toBe(0)
    expect(await moved(id, 200, () => api.post(`${access}/bypass`, undefined, { token }))).toBe(0)
  })

  it("a project delete raises it when the project leaves routing and when it is gone; accepting it does not", async () => {
    const { slug, name, id } = await fresh()
    const token = suite.admin.token
    expect(await moved(id, 202, () => api.delete(base(slug, name), { confirm: name }, { token }))).toBe(0)
    const run = async (): Promise<Reply> => {
      await suite.server.run(Jobs.JobRunner.runOnce([Projects.projectDeleteHandler]))
      return { status: 200, headers: new Headers(), body: null }
    }
    expect(await moved(id, 200, run)).toBe(2)
    expect((await revisions()).projects.filter((stamp) => stamp.projectId === id)).toHaveLength(1)
  })

  it("a write by a role too low, or to a project being deleted, does not raise it", async () => {
    const { slug, name, id } = await fresh()
    const viewer = await suite.withRole(slug, "viewer")
    const secret = `${base(slug, name)}/secrets/API_KEY`
    expect(await moved(id, 403, () => api.put(secret, { value: "v" }, { token: viewer.token }))).toBe(0)
    await api.delete(base(slug, name), { confirm: name }, { token: suite.admin.token })
    expect(await moved(id, 409, () => api.put(secret, { value: "v" }, { token: suite.admin.token }))).toBe(0)
  })
})
