import { bundleOf, manifestEntry, sampleEntries } from "@hostplane/testkit/deployments/BundleFixtures"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { type Reply, unique, useSuite } from "./support/TestServer.ts"

const keyed = (token: string, key: string, headers: Record<string, string> = {}) => ({
  token,
  headers: { "idempotency-key": key, ...headers }
})

describe.each(backends)("Idempotency-Key on POST (%s)", (_name, stores) => {
  const suite = useSuite(stores)
  const { api } = suite

  const orgsNamed = async (token: string, name: string) =>
    (await api.get("/v1/orgs", { token })).body.items.filter((org: { name: string }) => org.name === name)

  const upload = async (slug: string, project: string, bytes: Uint8Array, key: string): Promise<Reply> => {
    const response = await fetch(`${suite.server.url}/v1/orgs/${slug}/projects/${project}/deployments`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${suite.admin.token}`,
        "content-type": "application/gzip",
        "idempotency-key": key
      },
      body: bytes
    })
    const text = await response.text()
    return { status: response.status, headers: response.headers, body: text === "" ? text : JSON.parse(text) }
  }

  it("creating an org twice with one key makes one org: the retry replays the 201 (Idempotent-Replayed: true)", async () => {
    const name = unique("Acme Inc")
    const key = unique("key")
    const first = await api.post("/v1/orgs", { name }, keyed(suite.admin.token, key))
    const retry = await api.post("/v1/orgs", { name }, keyed(suite.admin.token, key))
    expect(first.status).toBe(201)
    expect(first.headers.get("idempotent-replayed")).toBeNull()
    expect(retry.status).toBe(201)
    expect(retry.headers.get("idempotent-replayed")).toBe("true")
    expect(retry.headers.get("content-type")).toBe("application/json")
    expect(retry.body).toEqual(first.body)
    expect(retry.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"))
    expect(await orgsNamed(suite.admin.token, name)).toHaveLength(1)
    // Without a key, the same request is a new org with a derived slug.
    const again = await api.post("/v1/orgs", { name }, { token: suite.admin.token })
    expect(again.body.slug).not.toBe(first.body.slug)
  })

  it("the same key with another body, path or method is 422 idempotency_key_reused and changes nothing", async () => {
    const key = unique("key")
    const slug = unique("reuse")
    expect((await api.post("/v1/orgs", { name: "One", slug }, keyed(suite.admin.token, key))).status).toBe(201)
    const otherBody = await api.post("/v1/orgs", { name: "Two", slug: unique("two") }, keyed(suite.admin.token, key))
    expect(otherBody.status).toBe(422)
    expect(otherBody.body).toEqual({ code: "idempotency_key_reused", message: expect.any(String) })
    const otherPath = await api.post(`/v1/orgs/${slug}/projects`, { name: "web" }, keyed(suite.admin.token, key))
    expect(otherPath.status).toBe(422)
    expect((await api.get(`/v1/orgs/${slug}/projects`, { token: suite.admin.token })).body.items).toEqual([])
    // Whitespace counts: the body is compared byte for byte.
    const respaced = await api.call("POST", "/v1/orgs", {
      ...keyed(suite.admin.token, key),
      raw: JSON.stringify({ name: "One", slug }, null, 2)
    })
    expect(respaced.status).toBe(422)
  })

  it("keys belong to one user: another user's request with the same key runs on its own", async () => {
    const key = unique("key")
    const other = await api.login(unique("other"))
    const mine = await api.post("/v1/orgs", { name: "Mine" }, keyed(suite.admin.token, key))
    const theirs = await api.post("/v1/orgs", { name: "Mine" }, keyed(other.token, key))
    expect(mine.status).toBe(201)
    expect(theirs.status).toBe(201)
    expect(theirs.headers.get("idempotent-replayed")).toBeNull()
    expect(theirs.body.slug).not.toBe(mine.body.slug)
  })

  it("a 4xx answer of the endpoint is kept and replayed; a body the schema refuses (400) keeps nothing", async () => {
    const slug = await suite.newOrg()
    const key = unique("key")
    const taken = await api.post("/v1/orgs", { name: "Dup", slug }, keyed(suite.admin.token, key))
    expect(taken.status).toBe(409)
    expect(taken.body.code).toBe("slug_taken")
    const replayed = await api.post("/v1/orgs", { name: "Dup", slug }, keyed(suite.admin.token, key))
    expect(replayed.status).toBe(409)
    expect(replayed.headers.get("idempotent-replayed")).toBe("true")
    expect(replayed.body).toEqual(taken.body)
    const fresh = unique("key")
    const invalid = await api.post("/v1/orgs", { name: 12 }, keyed(suite.admin.token, fresh))
    expect(invalid.status).toBe(400)
    const corrected = await api.post("/v1/orgs", { name: "Fixed" }, keyed(suite.admin.token, fresh))
    expect(corrected.status).toBe(201)
    expect(corrected.headers.get("idempotent-replayed")).toBeNull()
  })

  it("concurrent requests with one key wait for the first and replay it: one org", async () => {
    const name = unique("Racer")
    const key = unique("key")
    const replies = await Promise.all(
      Array.from({ length: 6 }, () => api.post("/v1/orgs", { name }, keyed(suite.admin.token, key)))
    )
    expect(replies.map((reply) => reply.status)).toEqual(Array(6).fill(201))
    expect(new Set(replies.map((reply) => reply.body.slug)).size).toBe(1)
    expect(replies.filter((reply) => reply.headers.get("idempotent-replayed") === "true")).toHaveLength(5)
    expect(await orgsNamed(suite.admin.token, name)).toHaveLength(1)
  })

  it("a retried upload (also concurrent) is the same deployment, not a new version; another bundle is 422", async () => {
    const slug = await suite.newOrg()
    const project = (await suite.newProject(slug)).name
    const bytes = await Effect.runPromise(bundleOf(sampleEntries))
    const key = unique("key")
    const replies = await Promise.all([upload(slug, project, bytes, key), upload(slug, project, bytes, key)])
    const retry = await upload(slug, project, bytes, key)
    expect([...replies, retry].map((reply) => reply.status)).toEqual([201, 201, 201])
    expect(new Set([...replies, retry].map((reply) => reply.body.id)).size).toBe(1)
    expect(retry.body.version).toBe(1)
    expect(retry.headers.get("idempotent-replayed")).toBe("true")
    const other = await Effect.runPromise(bundleOf([manifestEntry({ name: "other" })]))
    expect((await upload(slug, project, other, key)).status).toBe(422)
    const list = await api.get(`/v1/orgs/${slug}/projects/${project}/deployments`, { token: suite.admin.token })
    expect(list.body.items).toHaveLength(1)
    // A new key is a new upload.
    expect((await upload(slug, project, bytes, unique("key"))).body.version).toBe(2)
  })

  it("answers that carry a secret (Cache-Control: no-store) are not kept: a retry runs again", async () => {
    const slug = await suite.newOrg()
    const project = (await suite.newProject(slug)).name
    const key = unique("key")
    const path = `/v1/orgs/${slug}/projects/${project}/access/bypass`
    const first = await api.post(path, undefined, keyed(suite.admin.token, key))
    const second = await api.post(path, undefined, keyed(suite.admin.token, key))
    expect([first.status, second.status]).toEqual([200, 200])
    expect(second.headers.get("idempotent-replayed")).toBeNull()
    expect(second.body.secret).not.toBe(first.body.secret)
  })

  it("a malformed key is 400 bad_request; without a session the header is ignored (dev login, 401)", async () => {
    for (const key of ["", "a b", "x".repeat(256), "caf\u00e9"]) {
      const reply = await api.call("POST", "/v1/orgs", {
        token: suite.admin.token,
        body: { name: "Bad key" },
        headers: { "idempotency-key": key }
      })
      expect(reply.status, JSON.stringify(key)).toBe(400)
      expect(reply.body.code).toBe("bad_request")
    }
    const key = unique("key")
    const subject = unique("dev")
    const logins = [
      await api.call("POST", "/v1/auth/dev/login", { body: { subject }, headers: { "idempotency-key": key } }),
      await api.call("POST", "/v1/auth/dev/login", { body: { subject }, headers: { "idempotency-key": key } })
    ]
    expect(logins.map((reply) => reply.status)).toEqual([200, 200])
    expect(logins[1]!.body.token).not.toBe(logins[0]!.body.token)
    const anonymous = await api.post("/v1/orgs", { name: "x" }, { headers: { "idempotency-key": key } })
    expect(anonymous.status).toBe(401)
  })
})
