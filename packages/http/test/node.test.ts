import { Database, Deployments, Jobs } from "@hostplane/core"
import { BackupStoreMemory, DatabaseNodeMemory } from "@hostplane/testkit"
import { bundleOf, manifestEntry } from "@hostplane/testkit/deployments/BundleFixtures"
import { createHash } from "node:crypto"
import { gunzipSync } from "node:zlib"
import { Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { logCapture, useSuite } from "./support/TestServer.ts"

const nodeToken = "node-token-3f9a1c"

describe.each(backends)("decisions.md part 6 node API (%s)", (_name, stores) => {
  const { lines: logs, layer: captureLogs } = logCapture()
  const suite = useSuite(stores, { node: { token: nodeToken } }, captureLogs, undefined, {
    providers: [Layer.mergeAll(DatabaseNodeMemory.layer, BackupStoreMemory.layer)]
  })
  const { api, newOrg, newProject } = suite
  const asNode = { token: nodeToken }
  const state = async (after: number) => {
    const reply = await api.get(`/v1/node/state?after=${after}`, asNode)
    expect(reply.status).toBe(200)
    return reply.body as { revision: number; projects: Array<Record<string, any>> }
  }

  it("a missing or wrong node token is 401; a session is not a node token", async () => {
    for (const options of [{}, { token: "wrong" }, { token: suite.admin.token }]) {
      const reply = await api.get("/v1/node/state", options)
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 401, code: "unauthorized" })
    }
    const secrets = await api.get("/v1/node/projects/prj_x/secrets", { token: "wrong" })
    expect(secrets.status).toBe(401)
  })

  it("state answers the projects changed after `after`, each with what a node applies; a grant raises the revision", async () => {
    const start = (await state(0)).revision
    expect(Number.isInteger(start)).toBe(true)
    const slug = await newOrg()
    const project = await newProject(slug)
    const base = `/v1/orgs/${slug}/projects/${project.name}`
    await api.put(`${base}/secrets/API_KEY`, { value: "opened-value-71c" }, { token: suite.admin.token })
    const afterSecret = await state(start)
    const entry = afterSecret.projects.find((p) => p.projectId === project.id)
    expect(entry).toEqual({
      projectId: project.id,
      removed: false,
      org: slug,
      name: project.name,
      hostnames: [project.hostname],
      deployment: null,
      access: { mode: "public" },
      secrets: [{ name: "API_KEY", version: 1 }],
      bindings: { db: null, storage: null, email: null, auth: null, ai: null }
    })
    expect(afterSecret.revision).toBeGreaterThan(start)
    expect((await state(afterSecret.revision)).projects.map((p) => p.projectId)).not.toContain(project.id)
    const connect = await api.post(`${base}/database`, undefined, { token: suite.admin.token })
    const afterGrant = await state(afterSecret.revision)
    expect(afterGrant.revision).toBeGreaterThan(afterSecret.revision)
    const granted = afterGrant.projects.find((p) => p.projectId === project.id)
    expect(granted?.bindings.db).toEqual(connect.body)
    // A repeated create changes nothing a node applies: no new revision.
    await api.post(`${base}/database`, undefined, { token: suite.admin.token })
    expect((await state(afterGrant.revision)).projects.map((p) => p.projectId)).not.toContain(project.id)
  })

  it("a database delete drops the db binding when it commits, raising the revision once; accepting or aborting one does not", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const base = `/v1/orgs/${slug}/projects/${project.name}/database`
    const asAdmin = { token: suite.admin.token }
    const runOperations = () =>
      suite.server.run(
        Effect.flatMap(Effect.service(Database.Databases), (databases) =>
          Jobs.JobRunner.runOnce(databases.handlers.map((handler) => Effect.succeed(handler)))
        )
      )
    const connect = (await api.post(base, undefined, asAdmin)).body
    const granted = await state(0)
    expect(granted.projects.find((p) => p.projectId === project.id)?.bindings.db).toEqual(connect)
    // An aborted delete leaves the binding as it was.
    const aborted = await api.post(`${base}/delete`, { confirm: project.name }, asAdmin)
    await api.post(`${base}/operations/${aborted.body.operationId}/abort`, undefined, asAdmin)
    await runOperations()
    const afterAbort = await state(granted.revision)
    expect(afterAbort.projects.map((p) => p.projectId)).not.toContain(project.id)
    await api.post(`${base}/delete`, { confirm: project.name }, asAdmin)
    expect((await state(afterAbort.revision)).projects.map((p) => p.projectId)).not.toContain(project.id)
    await runOperations()
    const dropped = await state(afterAbort.revision)
    expect(dropped.revision).toBeGreaterThan(afterAbort.revision)
    expect(dropped.projects.filter((p) => p.projectId === project.id).map((p) => p.bindings.db)).toEqual([null])
    expect((await state(dropped.revision)).projects.map((p) => p.projectId)).not.toContain(project.id)
  })

  it("a bad `after` is 400", async () => {
    for (const after of ["-1", "x", "1.5"]) {
      const reply = await api.get(`/v1/node/state?after=${after}`, asNode)
      expect({ after, status: reply.status }).toEqual({ after, status: 400 })
    }
  })

  it("database/authority answers the clusters' certificate authority (null without one); node token only", async () => {
    const reply = await api.get("/v1/node/database/authority", asNode)
    // The memory clusters have no authority: a node then connects encrypted, unverified, as the control plane does.
    expect({ status: reply.status, body: reply.body }).toEqual({ status: 200, body: { authority: null } })
    for (const options of [{}, { token: "wrong" }, { token: suite.admin.token }]) {
      const refused = await api.get("/v1/node/database/authority", options)
      expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 401, code: "unauthorized" })
    }
  })

  it("secrets answers the opened values, never cached and never logged; an unknown project is 404", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const value = "s3cret-value-node-9d2"
    await api.put(`/v1/orgs/${slug}/projects/${project.name}/secrets/TOKEN`, { value }, { token: suite.admin.token })
    const reply = await api.get(`/v1/node/projects/${project.id}/secrets`, asNode)
    expect(reply.status).toBe(200)
    expect(reply.headers.get("cache-control")).toBe("no-store")
    expect(reply.body).toEqual({ items: [{ name: "TOKEN", version: 1, value }] })
    expect(logs.join("\n")).not.toContain(value)
    const unknown = await api.get("/v1/node/projects/prj_unknown/secrets", asNode)
    expect({ status: unknown.status, code: unknown.body.code }).toEqual({ status: 404, code: "not_found" })
  })

  it("artifacts streams a deployment's bundle as uploaded, ETag the digest; node token only; unknown digest 404", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const bytes = await Effect.runPromise(
      bundleOf([
        manifestEntry({ name: "artifact" }),
        { name: "assets/index.html", content: "<p>artifact</p>" },
        // Larger than one read chunk, so the answer is streamed in pieces.
        { name: "assets/big.bin", content: new Uint8Array(300_000).map((_, i) => (i * 7919) % 251) }
      ])
    )
    const uploaded = await fetch(`${suite.server.url}/v1/orgs/${slug}/projects/${project.name}/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${suite.admin.token}`, "content-type": "application/gzip" },
      body: bytes
    })
    expect(uploaded.status).toBe(201)
    const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`
    const live = (await state(0)).projects.find((p) => p.projectId === project.id)
    expect(live?.deployment?.digest).toBe(digest)
    const get = (path: string, token: string | undefined) =>
      fetch(`${suite.server.url}${path}`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } })

    const reply = await get(`/v1/node/artifacts/${digest}`, nodeToken)
    expect(reply.status).toBe(200)
    expect(reply.headers.get("content-type")).toBe("application/gzip")
    expect(reply.headers.get("etag")).toBe(`"${digest}"`)
    const body = new Uint8Array(await reply.arrayBuffer())
    expect(body.length).toBe(bytes.length)
    expect(Buffer.compare(Buffer.from(body), Buffer.from(bytes))).toBe(0)

    for (const token of [undefined, "wrong", suite.admin.token]) {
      const refused = await get(`/v1/node/artifacts/${digest}`, token)
      expect({ status: refused.status, code: ((await refused.json()) as { code: string }).code }).toEqual({
        status: 401,
        code: "unauthorized"
      })
    }
    const unknown = [
      `sha256:${"0".repeat(64)}`,
      "sha256:xyz",
      "not-a-digest",
      // The inflated tar stored beside the bundle is no bundle of its own.
      `sha256:${createHash("sha256").update(gunzipSync(bytes)).digest("hex")}`
    ]
    // The inflated tar is there, stored: it is refused for what it is, not for being absent.
    const tar = unknown[3]!
    expect(
      await suite.server.run(Effect.flatMap(Effect.service(Deployments.ArtifactStore), (store) => store.has(tar)))
    ).toBe(true)
    for (const candidate of unknown) {
      const missing = await get(`/v1/node/artifacts/${encodeURIComponent(candidate)}`, nodeToken)
      expect({ candidate, status: missing.status, code: ((await missing.json()) as { code: string }).code }).toEqual({
        candidate,
        status: 404,
        code: "not_found"
      })
    }
  })
})

describe.each(backends)("node API access passes for a node on another machine (%s)", (_name, stores) => {
  const { lines: logs, layer: captureLogs } = logCapture()
  const suite = useSuite(stores, { node: { token: nodeToken } }, captureLogs)
  const { api, newOrg, newProject } = suite
  const asNode = { token: nodeToken }
  const admin = () => ({ token: suite.admin.token })
  const protectedProject = async (password: string) => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const base = `/v1/orgs/${slug}/projects/${project.name}`
    expect((await api.put(`${base}/access`, { mode: "password", password }, admin())).status).toBe(200)
    return { slug, project, base }
  }
  const check = async (body: Record<string, unknown>) => {
    const reply = await api.post("/v1/node/access/check", body, asNode)
    expect(reply.status).toBe(200)
    return reply.body.admitted as boolean
  }

  it("a missing or wrong node token is 401 on every access route; a session is not a node token", async () => {
    for (const [path, body] of [
      ["/v1/node/access/check", { projectId: "prj_x", host: "a.example" }],
      ["/v1/node/access/code", { host: "a.example", code: "x" }],
      ["/v1/node/access/password", { projectId: "prj_x", host: "a.example", password: "x" }]
    ] as const) {
      for (const options of [{}, { token: "wrong" }, admin()]) {
        const reply = await api.post(path, body, options)
        expect({ path, status: reply.status, code: reply.body.code }).toEqual({
          path,
          status: 401,
          code: "unauthorized"
        })
      }
    }
  })

  it("the shared password is exchanged for a pass that admits at its host only, until the password changes; a wrong one gives no pass", async () => {
    const password = "node-pass-word-41b"
    const { project, base } = await protectedProject(password)
    const host = project.hostname
    expect(await check({ projectId: project.id, host })).toBe(false)
    const wrong = await api.post("/v1/node/access/password", { projectId: project.id, host, password: "nope" }, asNode)
    expect({ status: wrong.status, body: wrong.body }).toEqual({ status: 200, body: { pass: null, maxAge: 0 } })
    const right = await api.post("/v1/node/access/password", { projectId: project.id, host, password }, asNode)
    expect(right.status).toBe(200)
    expect(right.headers.get("cache-control")).toBe("no-store")
    expect(right.body).toEqual({ pass: expect.stringMatching(/^\S{32,}$/), maxAge: 43_200 })
    const pass = right.body.pass as string
    expect(await check({ projectId: project.id, host, pass })).toBe(true)
    expect(await check({ projectId: project.id, host: `other.${host}`, pass })).toBe(false)
    expect(await check({ projectId: project.id, host, pass: `${pass}x` })).toBe(false)
    // The policy is read as it is now: made public, every visitor is admitted.
    expect((await api.put(`${base}/access`, { mode: "public" }, admin())).status).toBe(200)
    expect(await check({ projectId: project.id, host })).toBe(true)
    expect((await api.put(`${base}/access`, { mode: "password", password: `${password}-2` }, admin())).status).toBe(200)
    expect(await check({ projectId: project.id, host, pass })).toBe(false)
    for (const line of logs) for (const value of [password, pass]) expect(line).not.toContain(value)
  })

  it("the bypass secret admits in any mode; an authorize code is a member's pass once, at its own host", async () => {
    const { project, base } = await protectedProject("node-pass-word-52c")
    const host = project.hostname
    const bypass = (await api.post(`${base}/access/bypass`, undefined, admin())).body.secret as string
    expect(await check({ projectId: project.id, host, bypass })).toBe(true)
    expect(await check({ projectId: project.id, host, bypass: `${bypass}x` })).toBe(false)
    expect((await api.put(`${base}/access`, { mode: "org" }, admin())).status).toBe(200)
    expect(await check({ projectId: project.id, host, bypass })).toBe(true)

    const code = async () => {
      const reply = await api.post("/v1/access/authorize", { to: host, next: "/" }, admin())
      expect(reply.status).toBe(200)
      return new URL(reply.body.url as string).searchParams.get("code")!
    }
    const first = await code()
    // At another host the code is refused and kept for its own.
    const elsewhere = await api.post("/v1/node/access/code", { host: `other.${host}`, code: first }, asNode)
    expect({ status: elsewhere.status, code: elsewhere.body.code }).toEqual({ status: 403, code: "forbidden" })
    const exchanged = await api.post("/v1/node/access/code", { host, code: first }, asNode)
    expect(exchanged.status).toBe(200)
    expect(exchanged.headers.get("cache-control")).toBe("no-store")
    const pass = exchanged.body.pass as string
    expect(await check({ projectId: project.id, host, pass })).toBe(true)
    const again = await api.post("/v1/node/access/code", { host, code: first }, asNode)
    expect({ status: again.status, code: again.body.code }).toEqual({ status: 403, code: "forbidden" })
    // A member's pass is not a password pass.
    expect(
      (await api.put(`${base}/access`, { mode: "password", password: "node-pass-word-63d" }, admin())).status
    ).toBe(200)
    expect(await check({ projectId: project.id, host, pass })).toBe(false)
    for (const line of logs) for (const value of [bypass, first, pass]) expect(line).not.toContain(value)
  })

  it("an unknown or deleted project is 404; oversized or malformed bodies are 400", async () => {
    for (const [path, body] of [
      ["/v1/node/access/check", { projectId: "prj_unknown", host: "a.example" }],
      ["/v1/node/access/password", { projectId: "prj_unknown", host: "a.example", password: "x" }]
    ] as const) {
      const reply = await api.post(path, body, asNode)
      expect({ path, status: reply.status, code: reply.body.code }).toEqual({ path, status: 404, code: "not_found" })
    }
    for (const body of [
      { projectId: "prj_x", host: "a.example", pass: "p".repeat(257) },
      { projectId: "prj_x", host: "" },
      { projectId: "prj_x" },
      { projectId: 7, host: "a.example" }
    ]) {
      const reply = await api.post("/v1/node/access/check", body, asNode)
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 400, code: "bad_request" })
    }
    const code = await api.post("/v1/node/access/code", { host: "a.example" }, asNode)
    expect(code.status).toBe(400)
  })
})

describe("decisions.md part 6 node API without SERVICE_NODE_TOKEN", () => {
  const suite = useSuite(backends[1]![1])
  it("every /v1/node route answers 501 node_api_off", async () => {
    for (const path of [
      "/v1/node/state",
      "/v1/node/projects/prj_x/secrets",
      `/v1/node/artifacts/sha256:${"0".repeat(64)}`,
      "/v1/node/database/authority"
    ]) {
      const reply = await suite.api.get(path, { token: "anything" })
      expect({ path, status: reply.status, code: reply.body.code }).toEqual({ path, status: 501, code: "node_api_off" })
    }
    for (const [path, body] of [
      ["/v1/node/access/check", { projectId: "prj_x", host: "a.example" }],
      ["/v1/node/access/code", { host: "a.example", code: "x" }],
      ["/v1/node/access/password", { projectId: "prj_x", host: "a.example", password: "x" }]
    ] as const) {
      const reply = await suite.api.post(path, body, { token: "anything" })
      expect({ path, status: reply.status, code: reply.body.code }).toEqual({ path, status: 501, code: "node_api_off" })
    }
  })
})
