import { Deployments } from "@hostplane/core"
import {
  type BundleEntry,
  bundleOf,
  generatedBundle,
  manifestEntry,
  sampleEntries
} from "@hostplane/testkit/deployments/BundleFixtures"
import { Effect, Stream } from "effect"
import { createHash, randomBytes } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Http from "node:http"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { auditOf, type Reply, type Suite, useSuite } from "./support/TestServer.ts"

const bundle = (entries: ReadonlyArray<BundleEntry> = sampleEntries) => Effect.runPromise(bundleOf(entries))

const sha256 = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`

/** Every file under the artifact folder, with its size: what a refused upload must leave unchanged. */
const snapshot = async (dir: string): Promise<Record<string, number>> => {
  const files: Record<string, number> = {}
  for (const entry of await Fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue
    const file = Path.join(entry.parentPath, entry.name)
    files[Path.relative(dir, file)] = (await Fs.stat(file)).size
  }
  return files
}

interface RawOptions {
  readonly token: string
  readonly headers?: Record<string, string>
  /** Sent as `Content-Length` without sending the body: the server must answer before reading any. */
  readonly declaredOnly?: number
  /** Sent with chunked transfer encoding (no `Content-Length`). */
  readonly chunks?: AsyncIterable<Uint8Array>
}

/**
 * One request over node:http on a fresh connection. Resolves with the response even when the server stops reading
 * the body and closes the connection while the client is still sending.
 */
const rawPost = (url: string, options: RawOptions) =>
  new Promise<Reply>((resolve, reject) => {
    const headers: Record<string, string> = {
      authorization: `Bearer ${options.token}`,
      "content-type": "application/gzip",
      ...options.headers
    }
    if (options.declaredOnly !== undefined) headers["content-length"] = String(options.declaredOnly)
    let answered = false
    const req = Http.request(url, { method: "POST", headers, agent: false }, (res) => {
      answered = true
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("error", () => undefined)
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        const body = (res.headers["content-type"] ?? "").includes("json") && text !== "" ? JSON.parse(text) : text
        resolve({ status: res.statusCode ?? 0, headers: new Headers(res.headers as Record<string, string>), body })
        req.destroy()
      })
    })
    req.on("error", (error) => {
      if (!answered) reject(error)
    })
    if (options.declaredOnly !== undefined) {
      req.flushHeaders()
      return
    }
    const chunks = options.chunks
    if (chunks === undefined) return void req.end()
    void (async () => {
      try {
        for await (const chunk of chunks) {
          if (answered || req.destroyed) break
          if (!req.write(chunk)) await new Promise<void>((resume) => req.once("drain", resume))
        }
        if (!answered && !req.destroyed) req.end()
      } catch {
        // the server closed the connection: the response (if any) tells why
      }
    })()
  })

const deploymentFields = [
  "bytes",
  "createdAt",
  "digest",
  "files",
  "git",
  "id",
  "live",
  "manifest",
  "uploadedBy",
  "version"
]

const smallLimits: Deployments.BundleLimits = {
  compressedBytes: 64 * 1024,
  uncompressedBytes: 1024 * 1024,
  entries: 50
}

const helpers = (suite: Suite) => {
  const { api } = suite
  const base = (slug: string, project: string) => `/v1/orgs/${slug}/projects/${project}`
  const newProject = async (slug: string) => (await suite.newProject(slug)).name
  const upload = async (
    slug: string,
    project: string,
    bytes: Uint8Array,
    options: { token?: string; headers?: Record<string, string> } = {}
  ): Promise<Reply> => {
    const response = await fetch(`${suite.server.url}${base(slug, project)}/deployments`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${options.token ?? suite.admin.token}`,
        "content-type": "application/gzip",
        ...options.headers
      },
      body: bytes
    })
    const text = await response.text()
    const body = (response.headers.get("content-type") ?? "").includes("json") && text !== "" ? JSON.parse(text) : text
    return { status: response.status, headers: response.headers, body }
  }
  const list = async (slug: string, project: string, query = "", token = suite.admin.token) =>
    api.get(`${base(slug, project)}/deployments${query}`, { token })
  const rollback = (slug: string, project: string, deploymentId: unknown, token = suite.admin.token) =>
    api.post(`${base(slug, project)}/rollback`, { deploymentId }, { token })
  return { base, newProject, upload, list, rollback }
}

describe.each(backends)("spec 4.3 deployments (%s)", (_name, stores) => {
  const suite = useSuite(stores, {}, undefined, undefined, { bundleLimits: smallLimits })
  const { api, newOrg, withRole } = suite
  const { base, newProject, upload, list, rollback } = helpers(suite)

  it("POST deployments (member) is 201 Deployment: version 1, live, sha256 digest, files, manifest, git null", async () => {
    const slug = await newOrg()
    const member = await withRole(slug, "member")
    const project = await newProject(slug)
    const bytes = await bundle()
    const reply = await upload(slug, project, bytes, { token: member.token })
    expect(reply.status).toBe(201)
    expect(Object.keys(reply.body).sort()).toEqual(deploymentFields)
    expect(reply.body).toMatchObject({
      version: 1,
      digest: sha256(bytes),
      bytes: bytes.byteLength,
      files: 4,
      uploadedBy: member.userId,
      live: true,
      manifest: { name: "site", main: "worker/index.js", database: true, ai: false },
      git: null
    })
    expect(reply.body.id).toMatch(/^dep_/)
    expect(Date.parse(reply.body.createdAt)).not.toBeNaN()
    const listed = await list(slug, project)
    expect(listed.status).toBe(200)
    expect(listed.body).toEqual({ items: [reply.body], nextCursor: null })
    const events = (await auditOf(suite.server, slug)).filter((event) => event.action === "deployment.create")
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({
      actorId: member.userId,
      data: { deploymentId: reply.body.id, version: 1, digest: sha256(bytes), previous: null }
    })
    const stored = await snapshot(suite.server.artifactDir)
    expect(Object.keys(stored)).toContain(`sha256/${sha256(bytes).slice(7, 9)}/${sha256(bytes).slice(7)}`)
  })

  it("versions count 1, 2, 3; identical bytes are a new version; the live flag moves to the newest", async () => {
    const slug = await newOrg()
    const uploader = await withRole(slug, "member", { email: "dev@example.com" })
    const project = await newProject(slug)
    const bytes = await bundle()
    const versions = []
    for (let n = 0; n < 3; n++) {
      const reply = await upload(slug, project, bytes, { token: uploader.token })
      expect(reply.status).toBe(201)
      versions.push(reply.body)
    }
    expect(versions.map((d) => d.version)).toEqual([1, 2, 3])
    expect(new Set(versions.map((d) => d.digest))).toEqual(new Set([sha256(bytes)]))
    expect(new Set(versions.map((d) => d.id)).size).toBe(3)
    const listed = await list(slug, project)
    expect(listed.body.items.map((d: { version: number; live: boolean }) => [d.version, d.live])).toEqual([
      [3, true],
      [2, false],
      [1, false]
    ])
    const detail = await api.get(base(slug, project), { token: suite.admin.token })
    expect(detail.body.liveDeployment).toEqual(versions[2])
    const overview = await api.get(`${base(slug, project)}/overview`, { token: suite.admin.token })
    expect(overview.body.serving).toEqual({
      deployment: versions[2],
      uploader: { userId: uploader.userId, name: null, email: "dev@example.com" }
    })
    expect(overview.body.recentDeployments.map((d: { version: number }) => d.version)).toEqual([3, 2, 1])
    expect(overview.body.resources.database).toEqual({ declared: true, provisioned: false })
  })

  it("versions are per project: another project starts again at 1", async () => {
    const slug = await newOrg()
    const first = await newProject(slug)
    const second = await newProject(slug)
    const bytes = await bundle()
    expect((await upload(slug, first, bytes)).body.version).toBe(1)
    expect((await upload(slug, first, bytes)).body.version).toBe(2)
    expect((await upload(slug, second, bytes)).body.version).toBe(1)
  })

  it("concurrent uploads to one project get distinct consecutive versions", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const bytes = await bundle()
    const replies = await Promise.all(Array.from({ length: 6 }, () => upload(slug, project, bytes)))
    expect(replies.map((r) => r.status)).toEqual(Array(6).fill(201))
    expect(replies.map((r) => r.body.version).sort()).toEqual([1, 2, 3, 4, 5, 6])
    const listed = await list(slug, project)
    expect(listed.body.items.filter((d: { live: boolean }) => d.live)).toHaveLength(1)
  })

  describe("X-Service-Git-* headers (display only)", () => {
    it("all four are decoded and returned in git", async () => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const reply = await upload(slug, project, await bundle(), {
        headers: {
          "x-service-git-commit": "ABCDEF0123456789",
          "x-service-git-message": "Fix%20the%20caf%C3%A9%20menu%0A%0ALonger%20body",
          "x-service-git-branch": "feature%2Fmen%C3%BC",
          "x-service-git-dirty": "true"
        }
      })
      expect(reply.status).toBe(201)
      expect(reply.body.git).toEqual({
        commit: "abcdef0123456789",
        message: "Fix the café menu",
        branch: "feature/menü",
        dirty: true
      })
      expect((await list(slug, project)).body.items[0].git).toEqual(reply.body.git)
    })

    it("one header alone gives git with the others null; the message is cut at 200 characters", async () => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const reply = await upload(slug, project, await bundle(), {
        headers: { "x-service-git-message": "m".repeat(300) }
      })
      expect(reply.status).toBe(201)
      expect(reply.body.git).toEqual({ commit: null, message: "m".repeat(200), branch: null, dirty: null })
    })

    it("each bad header is 400 bad_request naming it, and nothing is stored", async () => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const bytes = await bundle()
      const before = await snapshot(suite.server.artifactDir)
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["x-service-git-commit", "abc123"],
        ["x-service-git-commit", "a".repeat(65)],
        ["x-service-git-commit", "not-hex-at-all"],
        ["x-service-git-message", "100%"],
        ["x-service-git-message", "%C3%28"],
        ["x-service-git-branch", "%E0%A4%A"],
        ["x-service-git-dirty", "yes"],
        ["x-service-git-dirty", "TRUE"]
      ]
      for (const [header, value] of cases) {
        const reply = await upload(slug, project, bytes, { headers: { [header]: value } })
        expect(reply.status, `${header}: ${value}`).toBe(400)
        expect(reply.body.code).toBe("bad_request")
        expect(reply.body.details.header.toLowerCase()).toBe(header)
      }
      expect((await list(slug, project)).body.items).toEqual([])
      expect(await snapshot(suite.server.artifactDir)).toEqual(before)
    })
  })

  describe("refused bundles: 400 invalid_bundle with details.reason, nothing left behind", () => {
    const manifest = manifestEntry()
    const cases: ReadonlyArray<readonly [string, ReadonlyArray<BundleEntry> | Uint8Array, string]> = [
      ["../x", [manifest, { name: "../x", content: "x" }], "path_traversal"],
      ["assets/../../etc/passwd", [manifest, { name: "assets/../../etc/passwd", content: "x" }], "path_traversal"],
      ["an absolute path", [manifest, { name: "/etc/passwd", content: "x" }], "absolute_path"],
      ["a symlink", [manifest, { name: "assets/link", type: "symlink", linkname: "/etc/passwd" }], "symlink"],
      ["a hard link", [manifest, { name: "assets/hard", type: "link", linkname: "service.json" }], "hard_link"],
      [
        "a file outside service.json, worker/, assets/",
        [manifest, { name: "README.md", content: "x" }],
        "outside_layout"
      ],
      ["a folder outside the layout", [manifest, { name: "node_modules/", type: "directory" }], "outside_layout"],
      ["no service.json", [{ name: "assets/index.html", content: "<h1>" }], "manifest_missing"],
      ["service.json not JSON", [{ name: "service.json", content: "{ name: site" }], "manifest_not_json"],
      ["service.json with wrong types", [manifestEntry({ name: 7, database: "yes" })], "manifest_invalid"],
      ["gzip garbage", new Uint8Array(randomBytes(4096)), "corrupt_gzip"]
    ]

    it.each(cases)("%s", async (_label, entries, reason) => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const bytes = entries instanceof Uint8Array ? entries : await bundle(entries)
      const before = await snapshot(suite.server.artifactDir)
      const reply = await upload(slug, project, bytes)
      expect(reply.status).toBe(400)
      expect(reply.body.code).toBe("invalid_bundle")
      expect(reply.body.details.reason).toBe(reason)
      expect(typeof reply.body.message).toBe("string")
      expect((await list(slug, project)).body.items).toEqual([])
      expect(await snapshot(suite.server.artifactDir)).toEqual(before)
      const detail = await api.get(base(slug, project), { token: suite.admin.token })
      expect(detail.body.liveDeployment).toBeNull()
    })

    it("a bad manifest lists its issues", async () => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const reply = await upload(slug, project, await bundle([manifestEntry({ database: "yes" })]))
      expect(reply.body.details.reason).toBe("manifest_invalid")
      expect(reply.body.details.issues).toEqual([{ path: ["database"], message: expect.any(String) }])
    })

    it("a refused upload after a good one keeps the live deployment", async () => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const good = await upload(slug, project, await bundle())
      const bad = await upload(slug, project, await bundle([manifest, { name: "../x", content: "x" }]))
      expect(bad.status).toBe(400)
      expect((await list(slug, project)).body.items).toEqual([good.body])
      expect((await api.get(base(slug, project), { token: suite.admin.token })).body.liveDeployment).toEqual(good.body)
    })
  })

  describe("content type: the body is application/gzip", () => {
    it("another content type, or none, is 415 unsupported_media_type", async () => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const bytes = await bundle()
      for (const contentType of ["application/json", "application/octet-stream", "text/plain"]) {
        const reply = await upload(slug, project, bytes, { headers: { "content-type": contentType } })
        expect(reply.status, contentType).toBe(415)
        expect(reply.body.code).toBe("unsupported_media_type")
      }
      const bare = await fetch(`${suite.server.url}${base(slug, project)}/deployments`, {
        method: "POST",
        headers: { authorization: `Bearer ${suite.admin.token}` },
        body: bytes
      })
      expect(bare.status).toBe(415)
      expect((await list(slug, project)).body.items).toEqual([])
    })

    it("application/x-gzip is accepted too", async () => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const reply = await upload(slug, project, await bundle(), { headers: { "content-type": "application/x-gzip" } })
      expect(reply.status).toBe(201)
    })
  })

  describe("413 payload_too_large (limits made small for this suite)", () => {
    it("a Content-Length over the compressed limit is 413 before a byte is read", async () => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const declared = smallLimits.compressedBytes + 1
      const reply = await rawPost(`${suite.server.url}${base(slug, project)}/deployments`, {
        token: suite.admin.token,
        declaredOnly: declared
      })
      expect(reply.status).toBe(413)
      expect(reply.body).toMatchObject({
        code: "payload_too_large",
        details: { measure: "compressed_bytes", limit: smallLimits.compressedBytes, value: declared }
      })
    })

    it("a chunked body crossing the compressed limit is stopped mid-stream: 413, no row, no artifact", async () => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const before = await snapshot(suite.server.artifactDir)
      const body = generatedBundle({ files: 4, fileBytes: 64 * 1024, content: "random" })
      const reply = await rawPost(`${suite.server.url}${base(slug, project)}/deployments`, {
        token: suite.admin.token,
        chunks: Stream.toAsyncIterable(body)
      })
      expect(reply.status).toBe(413)
      expect(reply.body.code).toBe("payload_too_large")
      expect(reply.body.details).toMatchObject({ measure: "compressed_bytes", limit: smallLimits.compressedBytes })
      expect(reply.body.details.value).toBeGreaterThan(smallLimits.compressedBytes)
      expect((await list(slug, project)).body.items).toEqual([])
      expect(await snapshot(suite.server.artifactDir)).toEqual(before)
    })

    it("a small bundle inflating past the uncompressed limit is 413 uncompressed_bytes", async () => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const before = await snapshot(suite.server.artifactDir)
      const bytes = await Effect.runPromise(
        Stream.mkUint8Array(generatedBundle({ files: 2, fileBytes: 2 * 1024 * 1024, content: "text" }))
      )
      expect(bytes.byteLength).toBeLessThan(smallLimits.compressedBytes)
      const reply = await upload(slug, project, bytes)
      expect(reply.status).toBe(413)
      expect(reply.body.details).toMatchObject({ measure: "uncompressed_bytes", limit: smallLimits.uncompressedBytes })
      expect((await list(slug, project)).body.items).toEqual([])
      expect(await snapshot(suite.server.artifactDir)).toEqual(before)
    })

    it("more entries than the limit is 413 entries", async () => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const entries = Array.from({ length: 60 }, (_, n): BundleEntry => ({ name: `assets/${n}.txt`, content: "s" }))
      const reply = await upload(slug, project, await bundle([manifestEntry(), ...entries]))
      expect(reply.status).toBe(413)
      expect(reply.body.details).toMatchObject({ measure: "entries", limit: smallLimits.entries })
      expect((await list(slug, project)).body.items).toEqual([])
    })
  })

  describe("roles: list viewer, upload and rollback member", () => {
    itChecksRoles(suite, {
      name: "GET deployments",
      min: "viewer",
      setup: newProject,
      request: (slug, project) => ({ method: "GET", path: `${base(slug, project)}/deployments` }),
      ok: 200
    })
    itChecksRoles(suite, {
      name: "POST deployments (upload)",
      min: "member",
      setup: newProject,
      // No login is an empty Authorization header: the helper sends the admin's otherwise.
      request: async (slug, project) => {
        const bytes = await bundle()
        return (token) =>
          upload(slug, project, bytes, token === undefined ? { headers: { authorization: "" } } : { token })
      },
      ok: 201
    })
    itChecksRoles(suite, {
      name: "POST rollback",
      min: "member",
      setup: async (slug) => {
        const project = await newProject(slug)
        return { project, first: (await upload(slug, project, await bundle())).body.id }
      },
      // A newer upload per caller, so each successful rollback moves the live pointer back to the first.
      request: async (slug, { project, first }) => {
        expect((await upload(slug, project, await bundle())).status).toBe(201)
        return { method: "POST", path: `${base(slug, project)}/rollback`, body: { deploymentId: first } }
      },
      ok: 200
    })

    it("refused uploads and rollbacks leave the deployments as they were", async () => {
      const slug = await newOrg()
      const viewer = await withRole(slug, "viewer")
      const project = await newProject(slug)
      const first = await upload(slug, project, await bundle())
      expect((await upload(slug, project, await bundle(), { token: viewer.token })).status).toBe(403)
      expect((await rollback(slug, project, first.body.id, viewer.token)).status).toBe(403)
      expect((await upload(slug, project, await bundle(), { token: suite.outsider.token })).status).toBe(404)
      expect((await list(slug, project)).body.items).toHaveLength(1)
    })

    it("a missing project is 404 for list, upload and rollback", async () => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const first = await upload(slug, project, await bundle())
      expect((await list(slug, "missing")).status).toBe(404)
      const missing = await upload(slug, "missing", await bundle())
      expect(missing.status).toBe(404)
      expect(missing.body.code).toBe("not_found")
      expect((await rollback(slug, "missing", first.body.id)).status).toBe(404)
    })

    it("authorization comes before the body: an outsider's or viewer's upload is answered without reading it", async () => {
      const slug = await newOrg()
      const viewer = await withRole(slug, "viewer")
      const project = await newProject(slug)
      const url = `${suite.server.url}${base(slug, project)}/deployments`
      // Content-Length promised, no byte sent: only an answer given before reading can arrive.
      expect((await rawPost(url, { token: suite.outsider.token, declaredOnly: 1000 })).status).toBe(404)
      expect((await rawPost(url, { token: viewer.token, declaredOnly: 1000 })).status).toBe(403)
      const bad = await rawPost(url, {
        token: suite.admin.token,
        declaredOnly: 1000,
        headers: { "x-service-git-dirty": "maybe" }
      })
      expect(bad.status).toBe(400)
    })

    it("without a session the upload is 401", async () => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const response = await fetch(`${suite.server.url}${base(slug, project)}/deployments`, {
        method: "POST",
        headers: { "content-type": "application/gzip" },
        body: await bundle()
      })
      expect(response.status).toBe(401)
    })

    it("a project being deleted refuses uploads and rollbacks: 409 op_in_flight", async () => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const first = await upload(slug, project, await bundle())
      const started = await api.delete(base(slug, project), { confirm: project }, { token: suite.admin.token })
      expect(started.status).toBe(202)
      const reply = await upload(slug, project, await bundle())
      expect(reply.status).toBe(409)
      expect(reply.body.code).toBe("op_in_flight")
      expect((await rollback(slug, project, first.body.id)).body.code).toBe("op_in_flight")
    })
  })

  describe("rollback", () => {
    it("rollback to an older id moves the live pointer only: 200 Deployment, no new version, audit deployment.rollback", async () => {
      const slug = await newOrg()
      const member = await withRole(slug, "member")
      const project = await newProject(slug)
      const v1 = (await upload(slug, project, await bundle())).body
      const v2 = (await upload(slug, project, await bundle([manifestEntry({ name: "two" })]))).body
      expect(v2.version).toBe(2)
      const reply = await rollback(slug, project, v1.id, member.token)
      expect(reply.status).toBe(200)
      expect(reply.body).toEqual({ ...v1, live: true })
      const listed = await list(slug, project)
      expect(listed.body.items.map((d: { version: number; live: boolean }) => [d.version, d.live])).toEqual([
        [2, false],
        [1, true]
      ])
      const detail = await api.get(base(slug, project), { token: suite.admin.token })
      expect(detail.body.liveDeployment).toEqual({ ...v1, live: true })
      const overview = await api.get(`${base(slug, project)}/overview`, { token: suite.admin.token })
      expect(overview.body.serving.deployment.id).toBe(v1.id)
      const events = (await auditOf(suite.server, slug)).filter((event) => event.action === "deployment.rollback")
      expect(events).toHaveLength(1)
      expect(events[0]).toMatchObject({
        actorId: member.userId,
        data: { deploymentId: v1.id, version: 1, previous: v2.id }
      })
      // Forward again, and the next upload is version 3, live.
      expect((await rollback(slug, project, v2.id)).body).toEqual({ ...v2, live: true })
      const v3 = await upload(slug, project, await bundle())
      expect(v3.body).toMatchObject({ version: 3, live: true })
    })

    it("rollback to the live deployment changes nothing and writes no audit row", async () => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const v1 = (await upload(slug, project, await bundle())).body
      const reply = await rollback(slug, project, v1.id)
      expect(reply.status).toBe(200)
      expect(reply.body).toEqual(v1)
      expect((await auditOf(suite.server, slug)).filter((event) => event.action === "deployment.rollback")).toEqual([])
    })

    it("an id of another project, or an unknown id, is 404; the live pointer stays", async () => {
      const slug = await newOrg()
      const other = await newOrg()
      const project = await newProject(slug)
      const sibling = await newProject(slug)
      const elsewhere = await newProject(other)
      const mine = (await upload(slug, project, await bundle())).body
      const siblings = (await upload(slug, sibling, await bundle())).body
      const foreign = (await upload(other, elsewhere, await bundle())).body
      for (const id of [siblings.id, foreign.id, "dep_unknown", ""]) {
        const reply = await rollback(slug, project, id)
        expect(reply.status, id).toBe(404)
        expect(reply.body.code).toBe("not_found")
      }
      expect((await api.get(base(slug, project), { token: suite.admin.token })).body.liveDeployment.id).toBe(mine.id)
    })

    it("a rollback body without deploymentId is 400", async () => {
      const slug = await newOrg()
      const project = await newProject(slug)
      const reply = await api.post(`${base(slug, project)}/rollback`, {}, { token: suite.admin.token })
      expect(reply.status).toBe(400)
      expect(reply.body.code).toBe("bad_request")
    })
  })

  it("a page is 50 deployments when no limit is given (decisions part 1); the cursor reaches the rest", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const bytes = await bundle()
    for (let n = 0; n < 51; n++) expect((await upload(slug, project, bytes)).status).toBe(201)
    const first = await list(slug, project)
    expect(first.body.items).toHaveLength(50)
    expect(first.body.items[0]).toMatchObject({ version: 51, live: true })
    const rest = await list(slug, project, `?cursor=${first.body.nextCursor}`)
    expect(rest.body).toMatchObject({ items: [{ version: 1, live: false }], nextCursor: null })
  })

  it("the list pages newest first with limit and nextCursor; a foreign cursor is 400", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const bytes = await bundle()
    for (let n = 0; n < 5; n++) expect((await upload(slug, project, bytes)).status).toBe(201)
    const first = await list(slug, project, "?limit=2")
    expect(first.body.items.map((d: { version: number }) => d.version)).toEqual([5, 4])
    expect(first.body.nextCursor).toEqual(expect.any(String))
    const second = await list(slug, project, `?limit=2&cursor=${first.body.nextCursor}`)
    expect(second.body.items.map((d: { version: number }) => d.version)).toEqual([3, 2])
    const third = await list(slug, project, `?limit=2&cursor=${second.body.nextCursor}`)
    expect(third.body).toMatchObject({ items: [{ version: 1 }], nextCursor: null })
    expect((await list(slug, project)).body.items).toHaveLength(5)
    for (const cursor of ["abc", "0", "-1", "1.5"]) {
      const reply = await list(slug, project, `?cursor=${cursor}`)
      expect(reply.status, cursor).toBe(400)
      expect(reply.body.code).toBe("bad_request")
    }
  })
})

describe("spec 4.3 deployments at decisions.md's real limit (100 MiB compressed)", () => {
  const memory = backends.find(([name]) => name === "memory")
  if (memory === undefined) throw new Error("no memory backend")
  const suite = useSuite(memory[1])
  const { newOrg } = suite
  const { base, newProject, upload } = helpers(suite)
  const limit = Deployments.BundleLimits.compressedBytes

  it("a bundle over the 1 MiB JSON body limit streams through (3 MiB of random assets)", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const bytes = await bundle([manifestEntry(), { name: "assets/noise.bin", content: randomBytes(3 * 1024 * 1024) }])
    expect(bytes.byteLength).toBeGreaterThan(3 * 1024 * 1024)
    const reply = await upload(slug, project, bytes)
    expect(reply.status).toBe(201)
    expect(reply.body).toMatchObject({ bytes: bytes.byteLength, digest: sha256(bytes), files: 2 })
  })

  it("Content-Length of 100 MiB + 1 is 413 at once", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const reply = await rawPost(`${suite.server.url}${base(slug, project)}/deployments`, {
      token: suite.admin.token,
      declaredOnly: limit + 1
    })
    expect(reply.status).toBe(413)
    expect(reply.body.details).toEqual({ measure: "compressed_bytes", limit, value: limit + 1 })
  })

  it("a chunked upload past 100 MiB is stopped there: 413, nothing stored", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const before = await snapshot(suite.server.artifactDir)
    // Stored, not compressed (gzip level 0): the compressed stream crosses 100 MiB long before 500 MiB inflate.
    // Deflating 110 MiB of random bytes at level 1 took the generator twice the CPU for a stream of the same size.
    const body = generatedBundle({ files: 110, fileBytes: 1024 * 1024, content: "text", level: 0 })
    const reply = await rawPost(`${suite.server.url}${base(slug, project)}/deployments`, {
      token: suite.admin.token,
      chunks: Stream.toAsyncIterable(body)
    })
    expect(reply.status).toBe(413)
    expect(reply.body.details).toMatchObject({ measure: "compressed_bytes", limit })
    expect(await snapshot(suite.server.artifactDir)).toEqual(before)
  }, 120_000)
})
