import { Hostnames, Jobs, Secrets, services, Tls } from "@hostplane/core"
import { acmeClientFake, testAuthority } from "@hostplane/testkit"
import { Effect, Layer, Option } from "effect"
import { generateKeyPairSync } from "node:crypto"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { auditOf, unique, useSuite } from "./support/TestServer.ts"

const staticExpiry = "2030-01-01T00:00:00.000Z"

describe.each(backends)("decisions 16: a hostname's tls and its retry (%s)", (_name, stores) => {
  const fake = acmeClientFake(testAuthority(), (name) =>
    name.startsWith("refused.")
      ? { refuse: 'Error creating new order :: Cannot issue for "refused": rejectedIdentifier' }
      : name.startsWith("down.")
        ? { unreachable: true }
        : { issue: true }
  )
  const tls = Layer.merge(
    Tls.TlsConfig.make({ acme: true, staticCertificate: { names: ["*.apps.localhost"], expiresAt: staticExpiry } }),
    fake.layer
  )
  const suite = useSuite(stores, {}, tls as Layer.Layer<never>)
  const { api, newOrg, withRole } = suite

  const base = (slug: string, project: string) => `/v1/orgs/${slug}/projects/${project}/hostnames`
  /** Adds a custom name and makes it active as a passed ownership check would. */
  const activeName = async (slug: string, project: string, prefix: string) => {
    const name = `${prefix}.${unique("shop")}.example`
    const added = await api.post(base(slug, project), { name }, { token: suite.admin.token })
    expect(added.status).toBe(200)
    await suite.server.run(
      Effect.gen(function* () {
        const store = yield* Hostnames.HostnameStore
        const row = Option.getOrThrow(yield* store.find(name))
        yield* store.markActive(name, row.verifyToken!, new Date().toISOString())
      })
    )
    return name
  }
  /** One sweep (what the periodic job does every 5 seconds), then every due certificate job. */
  const sweepAndIssue = () =>
    suite.server.run(
      Effect.gen(function* () {
        const sweep = yield* Tls.tlsSweepHandler
        yield* Effect.orDie(
          sweep.run("sweep", {
            id: "sweep",
            kind: "tls_sweep",
            key: null,
            payload: {},
            phase: "sweep",
            attempts: 1,
            createdAt: ""
          })
        )
        yield* Jobs.JobRunner.runOnce([Tls.tlsIssueHandler], { concurrency: 20 })
      }).pipe(Effect.provide(services))
    )
  const tlsOf = async (slug: string, project: string, name: string) => {
    const list = await api.get(base(slug, project), { token: suite.admin.token })
    expect(JSON.stringify(list.body)).not.toContain("PRIVATE KEY")
    return list.body.items.find((item: { name: string }) => item.name === name).tls
  }

  it("the default name under the static certificate is issued with its expiry; a new custom name is pending", async () => {
    const slug = await newOrg()
    const project = await suite.newProject(slug)
    expect(await tlsOf(slug, project.name, project.hostname)).toEqual({
      status: "issued",
      expiresAt: staticExpiry,
      lastError: null
    })
    const name = `www.${unique("pending")}.example`
    const added = await api.post(base(slug, project.name), { name }, { token: suite.admin.token })
    expect(added.body.tls).toEqual({ status: "pending", expiresAt: null, lastError: null })
  })

  it("an active custom name gets its certificate from one order, and no second order while it is valid", async () => {
    const slug = await newOrg()
    const project = (await suite.newProject(slug)).name
    const name = await activeName(slug, project, "www")
    await sweepAndIssue()
    const tls = await tlsOf(slug, project, name)
    expect(tls.status).toBe("issued")
    expect(Date.parse(tls.expiresAt)).toBeGreaterThan(Date.now() + 80 * 86_400_000)
    expect(tls.lastError).toBeNull()
    expect(fake.orders.get(name)).toBe(1)
    expect(fake.published).toContain(`tok-${name}`)
    await sweepAndIssue()
    expect(fake.orders.get(name)).toBe(1)
    // The key is kept sealed, and the challenge is gone once validated.
    await suite.server.run(
      Effect.gen(function* () {
        const store = yield* Tls.CertificateStore
        const row = Option.getOrThrow(yield* store.find(name))
        expect(row.key?.ciphertext).not.toContain("PRIVATE KEY")
        expect(Option.isNone(yield* store.challenge(`tok-${name}`))).toBe(true)
      })
    )
    const audit = JSON.stringify(await auditOf(suite.server, slug))
    expect(audit).not.toContain("PRIVATE KEY")
  })

  it("a CA refusal is failed with the CA's detail, backs off without a new order, and retry (member) starts one at once", async () => {
    const slug = await newOrg()
    const project = (await suite.newProject(slug)).name
    const name = await activeName(slug, project, "refused")
    await sweepAndIssue()
    expect(await tlsOf(slug, project, name)).toEqual({
      status: "failed",
      expiresAt: null,
      lastError: 'Error creating new order :: Cannot issue for "refused": rejectedIdentifier'
    })
    await sweepAndIssue()
    await sweepAndIssue()
    expect(fake.orders.get(name)).toBe(1)
    const viewer = await withRole(slug, "viewer")
    const path = `${base(slug, project)}/${name}/tls/retry`
    expect((await api.post(path, undefined, { token: viewer.token })).status).toBe(403)
    expect((await api.post(path, undefined, { token: suite.outsider.token })).status).toBe(404)
    expect(
      (await api.post(`${base(slug, project)}/nope.example/tls/retry`, undefined, { token: suite.admin.token })).status
    ).toBe(404)
    const member = await withRole(slug, "member")
    const retried = await api.post(path, undefined, { token: member.token })
    expect(retried.status).toBe(200)
    expect(retried.body.name).toBe(name)
    expect(retried.body.tls.status).toBe("pending")
    await sweepAndIssue()
    expect(fake.orders.get(name)).toBe(2)
    expect((await tlsOf(slug, project, name)).status).toBe("failed")
  })

  it("an unreachable CA leaves the name pending with the reason, retried later; retry changes nothing then", async () => {
    const slug = await newOrg()
    const project = (await suite.newProject(slug)).name
    const name = await activeName(slug, project, "down")
    await sweepAndIssue()
    const tls = await tlsOf(slug, project, name)
    expect(tls.status).toBe("pending")
    expect(tls.lastError).toContain("could not be reached")
    const retried = await api.post(`${base(slug, project)}/${name}/tls/retry`, undefined, { token: suite.admin.token })
    expect(retried.status).toBe(200)
    expect(retried.body.tls).toEqual(tls)
  })

  it("a job taken over after a crash continues the order it had stored instead of placing another", async () => {
    const slug = await newOrg()
    const project = (await suite.newProject(slug)).name
    const name = await activeName(slug, project, "resumed")
    // What a runner killed after the CA accepted the order leaves behind: the order URL and the sealed CSR key.
    await suite.server.run(
      Effect.gen(function* () {
        const sealer = yield* Secrets.Sealer
        const key = generateKeyPairSync("ec", { namedCurve: "P-256" })
          .privateKey.export({ type: "pkcs8", format: "pem" })
          .toString()
        yield* (yield* Tls.CertificateStore).put({
          name,
          status: "pending",
          chain: null,
          key: null,
          expiresAt: null,
          orderUrl: `https://ca.fake/order/${name}/0`,
          orderKey: yield* sealer.seal(key, Tls.keyContext(name)),
          lastError: null,
          failures: 0,
          retryAt: null,
          updatedAt: new Date().toISOString()
        })
      })
    )
    await sweepAndIssue()
    expect((await tlsOf(slug, project, name)).status).toBe("issued")
    expect(fake.orders.get(name)).toBeUndefined()
  })

  it("a deleted hostname's certificate is dropped", async () => {
    const slug = await newOrg()
    const project = (await suite.newProject(slug)).name
    const name = await activeName(slug, project, "gone")
    await sweepAndIssue()
    expect((await tlsOf(slug, project, name)).status).toBe("issued")
    expect((await api.delete(`${base(slug, project)}/${name}`, undefined, { token: suite.admin.token })).status).toBe(
      204
    )
    await sweepAndIssue()
    const row = await suite.server.run(
      Effect.flatMap(Effect.service(Tls.CertificateStore), (store) => store.find(name))
    )
    expect(Option.isNone(row)).toBe(true)
  })

  it("retry on a name whose project is gone or an org the caller cannot see is 404", async () => {
    const slug = await newOrg()
    expect(
      (await api.post(`${base(slug, "nothing")}/www.x.example/tls/retry`, undefined, { token: suite.admin.token }))
        .status
    ).toBe(404)
  })
})
