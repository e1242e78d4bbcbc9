import * as Pg from "@hostplane/adapters-pg"
import { layer as pgDatabase } from "@hostplane/adapters-pg/PgDatabase"
import * as DnsResolverUdp from "@hostplane/adapters-providers/dns/DnsResolverUdp"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { Hostnames, Jobs, Kernel, Projects } from "@hostplane/core"
import { bundleOf, manifestEntry } from "@hostplane/testkit"
import { FakeDnsServer } from "@hostplane/testkit/dns/FakeDnsServer"
import { Duration, Effect, Layer, ManagedRuntime, Redacted } from "effect"
import * as Fs from "node:fs/promises"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends } from "../../http/test/support/backends.ts"
import { countingProxy } from "../../http/test/support/CountingProxy.ts"
import { client, startTestServer, type TestServer, unique, useSuite } from "../../http/test/support/TestServer.ts"

// The edge answers from memory: what a host routes to, the project's access policy and live deployment. Every change
// to them is served on the next request by the server that made it, and within a second by every other server on
// the same database (they read the node revision).

const edgeGet = (base: string, host: string, path = "/") =>
  new Promise<{ status: number; body: string; code: string | undefined }>((resolve, reject) => {
    const url = new URL(base)
    const request = Http.request({ host: url.hostname, port: url.port, path, headers: { host } }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => {
        const body = Buffer.concat(chunks).toString()
        let code: string | undefined
        try {
          code = (JSON.parse(body) as { code?: string }).code
        } catch {
          code = undefined
        }
        resolve({ status: response.statusCode!, body, code })
      })
    })
    request.on("error", reject)
    request.end()
  })

const edgeBytes = (base: string, host: string, path: string) =>
  new Promise<{ status: number; length: string | undefined; body: Buffer }>((resolve, reject) => {
    const url = new URL(base)
    const request = Http.request({ host: url.hostname, port: url.port, path, headers: { host } }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () =>
        resolve({
          status: response.statusCode!,
          length: response.headers["content-length"],
          body: Buffer.concat(chunks)
        })
      )
    })
    request.on("error", reject)
    request.end()
  })

const site = (version: string) =>
  Effect.runPromise(
    bundleOf([manifestEntry({ name: "site" }), { name: "assets/index.html", content: `<h1>home ${version}</h1>` }])
  )

const deploy = async (url: string, token: string, slug: string, project: string, version: string) => {
  const reply = await fetch(`${url}/v1/orgs/${slug}/projects/${project}/deployments`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
    body: await site(version)
  })
  expect(reply.status).toBe(201)
  return ((await reply.json()) as { id: string }).id
}

describe.each(backends)("edge cache, the server that writes (%s)", (_name, stores) => {
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
  const { api } = suite
  const edge = (host: string, path = "/") => edgeGet(suite.server.edgeUrl, host, path)

  /** A project deployed once and requested twice, so its host and project are held. */
  const warm = async () => {
    const slug = await suite.newOrg()
    const project = await suite.newProject(slug)
    const first = await deploy(suite.server.url, suite.admin.token, slug, project.name, "v1")
    for (let i = 0; i < 2; i++) expect((await edge(project.hostname)).body).toBe("<h1>home v1</h1>")
    return { slug, name: project.name, host: project.hostname, first }
  }

  it("a deploy and a rollback are served on the next request", async () => {
    const { slug, name, host, first } = await warm()
    await deploy(suite.server.url, suite.admin.token, slug, name, "v2")
    expect((await edge(host)).body).toBe("<h1>home v2</h1>")
    const rolled = await api.post(
      `/v1/orgs/${slug}/projects/${name}/rollback`,
      { deploymentId: first },
      { token: suite.admin.token }
    )
    expect(rolled.status).toBe(200)
    expect((await edge(host)).body).toBe("<h1>home v1</h1>")
  })

  it("an access policy change is enforced on the next request, both ways", async () => {
    const { slug, name, host } = await warm()
    const access = `/v1/orgs/${slug}/projects/${name}/access`
    const locked = await api.put(access, { mode: "password", password: "correct horse" }, { token: suite.admin.token })
    expect(locked.status).toBe(200)
    expect(await edge(host)).toMatchObject({ status: 401, code: "unauthorized" })
    expect((await api.put(access, { mode: "public" }, { token: suite.admin.token })).status).toBe(200)
    expect((await edge(host)).body).toBe("<h1>home v1</h1>")
  })

  it("a custom hostname routes on the next request once verified, though it was just unknown, and not once removed", async () => {
    const { slug, name } = await warm()
    const custom = `www.${unique("shop")}.example`
    const hostnames = `/v1/orgs/${slug}/projects/${name}/hostnames`
    const added = await api.post(hostnames, { name: custom }, { token: suite.admin.token })
    expect(added.status).toBe(200)
    // Pending: unknown, and that answer is held too.
    for (let i = 0; i < 2; i++) expect((await edge(custom)).code).toBe("unknown_hostname")
    await Effect.runPromise(fake.set(added.body.verify.name, "TXT", [added.body.verify.value]))
    const verified = await api.post(`${hostnames}/${custom}/verify`, undefined, { token: suite.admin.token })
    expect(verified.body.status).toBe("active")
    expect((await edge(custom)).body).toBe("<h1>home v1</h1>")
    expect((await api.delete(`${hostnames}/${custom}`, undefined, { token: suite.admin.token })).status).toBe(204)
    expect((await edge(custom)).code).toBe("unknown_hostname")
  })

  it("small files are served from memory and large ones streamed, byte for byte, with their length, each time", async () => {
    const slug = await suite.newOrg()
    const project = await suite.newProject(slug)
    const small = new Uint8Array(Array.from({ length: 2048 }, (_, i) => (i * 13) % 256))
    const large = new Uint8Array(Array.from({ length: 300 * 1024 }, (_, i) => (i * 7) % 251))
    const reply = await fetch(`${suite.server.url}/v1/orgs/${slug}/projects/${project.name}/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${suite.admin.token}`, "content-type": "application/gzip" },
      body: await Effect.runPromise(
        bundleOf([
          manifestEntry({ name: "files" }),
          { name: "assets/small.bin", content: small },
          { name: "assets/large.bin", content: large }
        ])
      )
    })
    expect(reply.status).toBe(201)
    for (const [path, bytes] of [
      ["/small.bin", small],
      ["/large.bin", large]
    ] as const) {
      for (let i = 0; i < 2; i++) {
        const served = await edgeBytes(suite.server.edgeUrl, project.hostname, path)
        expect(served.status).toBe(200)
        expect(served.length).toBe(String(bytes.byteLength))
        expect(Buffer.compare(served.body, Buffer.from(bytes))).toBe(0)
      }
    }
  })

  it("a deleted project's hosts are unknown once its delete ran", async () => {
    const { slug, name, host } = await warm()
    const started = await api.delete(
      `/v1/orgs/${slug}/projects/${name}`,
      { confirm: name },
      { token: suite.admin.token }
    )
    expect(started.status).toBe(202)
    await suite.server.run(Jobs.JobRunner.runOnce([Projects.projectDeleteHandler]))
    expect((await edge(host)).code).toBe("unknown_hostname")
  })
})

describe("edge cache across servers on one PostgreSQL", () => {
  const database = ManagedRuntime.make(TestDatabase.layer)
  let url: Redacted.Redacted<string>
  let proxy: Awaited<ReturnType<typeof countingProxy>>
  let one: TestServer
  let two: TestServer
  beforeAll(async () => {
    url = (await database.runPromise(Effect.service(TestDatabase))).url
    proxy = await countingProxy(new URL(Redacted.value(url)))
    // One artifact folder, as replicas share a bucket; each server has its own change bus, as separate processes do:
    // only the node revision connects them.
    const artifactDir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-edge-cache-"))
    const serverOn = (databaseUrl: Redacted.Redacted<string>) =>
      startTestServer(
        Layer.merge(
          Pg.layer.pipe(Layer.provideMerge(pgDatabase(databaseUrl))),
          Layer.succeed(Kernel.NodeChanges, Kernel.makeNodeChanges())
        ),
        {},
        undefined,
        undefined,
        { artifactDir }
      )
    ;[one, two] = await Promise.all([serverOn(url), serverOn(proxy.url)])
  }, 120_000)
  afterAll(async () => {
    await Promise.all([one?.close(), two?.close()])
    await proxy?.close()
    await database.dispose()
  })

  /** Polls until `check` holds, failing after `limitMs`. */
  const within = async (limitMs: number, check: () => Promise<boolean>) => {
    const start = performance.now()
    while (!(await check())) {
      if (performance.now() - start > limitMs) throw new Error(`not within ${limitMs} ms`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  it("a deploy, a rollback, an access change, a secret change and a project delete on one are served by the other", async () => {
    const api = client(one.url)
    const admin = await api.login(unique("admin"))
    const slug = unique("org")
    expect((await api.post("/v1/orgs", { name: "Two", slug }, { token: admin.token })).status).toBe(201)
    const created = await api.post(`/v1/orgs/${slug}/projects`, { name: unique("site") }, { token: admin.token })
    const { name, hostname: host } = created.body as { name: string; hostname: string }
    const first = await deploy(one.url, admin.token, slug, name, "v1")
    const servedByTwo = (status: number, body?: string) => async () => {
      const reply = await edgeGet(two.edgeUrl, host)
      return reply.status === status && (body === undefined || reply.body === body)
    }
    await within(2_000, servedByTwo(200, "<h1>home v1</h1>"))

    // Warm on the second server, once its poll has heard of the deploy: its edge reads no store but the revision.
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    await edgeGet(two.edgeUrl, host)
    const before = proxy.statements.length
    for (let i = 0; i < 20; i++) expect((await edgeGet(two.edgeUrl, host)).body).toBe("<h1>home v1</h1>")
    const read = proxy.statements.slice(before).filter((statement) => !statement.includes("node_revision"))
    expect(read).toEqual([])

    // The other server hears each raise when it commits and reads the revision then (it reads it every 5 s besides:
    // the bound, which leaves room for a loaded machine, is met by the wake-up, not by that read).
    await deploy(one.url, admin.token, slug, name, "v2")
    await within(2_000, servedByTwo(200, "<h1>home v2</h1>"))
    const rolled = await api.post(
      `/v1/orgs/${slug}/projects/${name}/rollback`,
      { deploymentId: first },
      {
        token: admin.token
      }
    )
    expect(rolled.status).toBe(200)
    await within(2_000, servedByTwo(200, "<h1>home v1</h1>"))
    const access = `/v1/orgs/${slug}/projects/${name}/access`
    expect((await api.put(access, { mode: "password", password: "pw pw pw" }, { token: admin.token })).status).toBe(200)
    await within(2_000, servedByTwo(401))
    expect((await api.put(access, { mode: "public" }, { token: admin.token })).status).toBe(200)
    await within(2_000, servedByTwo(200, "<h1>home v1</h1>"))

    // A secret is the worker's, not the edge's, but it raises the revision: the other server reads the project again.
    const settled = proxy.statements.length
    const secret = await api.put(
      `/v1/orgs/${slug}/projects/${name}/secrets/API_KEY`,
      { value: "s3cret" },
      {
        token: admin.token
      }
    )
    expect(secret.status).toBe(200)
    await within(2_000, async () => {
      await edgeGet(two.edgeUrl, host)
      return proxy.statements.slice(settled).some((statement) => /deployments/i.test(statement))
    })

    const started = await api.delete(`/v1/orgs/${slug}/projects/${name}`, { confirm: name }, { token: admin.token })
    expect(started.status).toBe(202)
    await one.run(Jobs.JobRunner.runOnce([Projects.projectDeleteHandler]))
    await within(2_000, async () => (await edgeGet(two.edgeUrl, host)).code === "unknown_hostname")
  }, 120_000)

  it("a server whose revision feed is lost serves the other's changes within a second all the same, and listens again", async () => {
    const api = client(one.url)
    const admin = await api.login(unique("admin"))
    const slug = unique("org")
    expect((await api.post("/v1/orgs", { name: "Lost", slug }, { token: admin.token })).status).toBe(201)
    const created = await api.post(`/v1/orgs/${slug}/projects`, { name: unique("site") }, { token: admin.token })
    const { name, hostname: host } = created.body as { name: string; hostname: string }
    const servedByTwo = (status: number, body?: string) => async () => {
      const reply = await edgeGet(two.edgeUrl, host)
      return reply.status === status && (body === undefined || reply.body === body)
    }
    const first = await deploy(one.url, admin.token, slug, name, "v1")
    await within(2_000, servedByTwo(200, "<h1>home v1</h1>"))

    // The second server's LISTEN connection drops, and so does each one it opens again: it reads the revision every
    // quarter second meanwhile. Four changes each served within the bound (its 5 s read would rarely meet all four).
    const feed = /^\s*LISTEN\s+"?hostplane_revision\b/iu
    proxy.cut(feed)
    try {
      await deploy(one.url, admin.token, slug, name, "v2")
      await within(2_000, servedByTwo(200, "<h1>home v2</h1>"))
      const rolled = await api.post(
        `/v1/orgs/${slug}/projects/${name}/rollback`,
        { deploymentId: first },
        { token: admin.token }
      )
      expect(rolled.status).toBe(200)
      await within(2_000, servedByTwo(200, "<h1>home v1</h1>"))
      const access = `/v1/orgs/${slug}/projects/${name}/access`
      expect((await api.put(access, { mode: "password", password: "pw pw pw" }, { token: admin.token })).status).toBe(
        200
      )
      await within(2_000, servedByTwo(401))
      expect((await api.put(access, { mode: "public" }, { token: admin.token })).status).toBe(200)
      await within(2_000, servedByTwo(200, "<h1>home v1</h1>"))
    } finally {
      proxy.cut(undefined)
    }

    // It subscribes again (every second while lost), and then hears the next change.
    const listens = () => proxy.statements.filter((statement) => feed.test(statement)).length
    const cutAt = listens()
    await within(5_000, async () => listens() > cutAt)
    await deploy(one.url, admin.token, slug, name, "v3")
    await within(2_000, servedByTwo(200, "<h1>home v3</h1>"))
  }, 120_000)
})
