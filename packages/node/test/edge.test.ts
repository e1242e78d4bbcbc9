import { bundleOf, manifestEntry } from "@hostplane/testkit"
import { Access } from "@hostplane/core"
import { Effect, Layer } from "effect"
import * as Http from "node:http"
import { describe, expect, it } from "vitest"
import { backends } from "../../http/test/support/backends.ts"
import { unique, useSuite } from "../../http/test/support/TestServer.ts"
import { edgeCall } from "./support/RuntimeServer.ts"

const assets = (version: string) => [
  manifestEntry({ name: "site" }),
  { name: "assets/index.html", content: `<h1>home ${version}</h1>` },
  { name: "assets/app.js", content: `console.log("${version}")` },
  { name: "assets/docs/index.html", content: `<h1>docs ${version}</h1>` },
  {
    name: "assets/logo.bin",
    content: new Uint8Array(Array.from({ length: 4096 }, (_, i) => (i * 7 + version.length) % 256))
  }
]

const passwordPost = (password: string, next = "/") => ({
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams({ password, next }).toString()
})

describe.each(backends)("the reference edge (%s)", (_name, stores) => {
  const suite = useSuite(stores)
  const { api } = suite

  /** A raw request to the edge with a chosen Host header (fetch may not set Host). */
  const edge = (host: string, path: string, options: Parameters<typeof edgeCall>[3] = {}) =>
    edgeCall(suite.server.edgeUrl, host, path, options)

  const upload = async (slug: string, project: string, version: string) => {
    const bytes = await Effect.runPromise(bundleOf(assets(version)))
    const reply = await fetch(`${suite.server.url}/v1/orgs/${slug}/projects/${project}/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${suite.admin.token}`, "content-type": "application/gzip" },
      body: bytes
    })
    expect(reply.status).toBe(201)
    return (await reply.json()) as { id: string; version: number }
  }

  /** An org with a project deployed once; answers the names and the default hostname. */
  const deployed = async () => {
    const slug = await suite.newOrg()
    const project = unique("site")
    const created = await api.post(`/v1/orgs/${slug}/projects`, { name: project }, { token: suite.admin.token })
    expect(created.status).toBe(201)
    const first = await upload(slug, project, "v1")
    return { slug, project, host: created.body.hostname as string, first }
  }

  it("an unknown hostname is 404 unknown_hostname", async () => {
    const reply = await edge("nobody.example.test", "/")
    expect(reply.status).toBe(404)
    expect(reply.json().code).toBe("unknown_hostname")
  })

  it("a project with nothing deployed answers 404", async () => {
    const slug = await suite.newOrg()
    const created = await api.post(`/v1/orgs/${slug}/projects`, { name: unique("empty") }, { token: suite.admin.token })
    const reply = await edge(created.body.hostname, "/")
    expect(reply.status).toBe(404)
    expect(reply.json().code).toBe("not_found")
  })

  it("serves the live deployment's assets by Host: index pages, content types, ETag and 304, HEAD, 404", async () => {
    const { host } = await deployed()
    const home = await edge(host, "/")
    expect(home.status).toBe(200)
    expect(home.body.toString()).toBe("<h1>home v1</h1>")
    expect(home.headers["content-type"]).toBe("text/html; charset=utf-8")
    expect(home.headers["etag"]).toMatch(/^"[0-9a-f]{64}"$/)
    expect((await edge(`${host.toUpperCase()}:8081`, "/docs/")).body.toString()).toBe("<h1>docs v1</h1>")
    expect((await edge(host, "/docs")).body.toString()).toBe("<h1>docs v1</h1>")
    const script = await edge(host, "/app.js")
    expect(script.headers["content-type"]).toBe("text/javascript; charset=utf-8")
    const cached = await edge(host, "/app.js", { headers: { "if-none-match": script.headers["etag"] as string } })
    expect(cached.status).toBe(304)
    const head = await edge(host, "/app.js", { method: "HEAD" })
    expect(head.status).toBe(200)
    expect(head.headers["content-length"]).toBe(String(script.body.byteLength))
    expect(head.body.byteLength).toBe(0)
    const missing = await edge(host, "/nope.css")
    expect(missing.status).toBe(404)
    expect(missing.json().code).toBe("not_found")
    // Dot segments resolve inside assets/: nothing outside it (service.json, worker/) is ever served.
    for (const path of ["/%2e%2e/service.json", "/../service.json", "/..%2fworker/x.js"]) {
      const escaped = await edge(host, path)
      expect(escaped.status).toBeGreaterThanOrEqual(400)
      expect(escaped.body.toString()).not.toContain('"name"')
    }
    expect((await edge(host, "/app.js", { method: "POST" })).status).toBe(405)
    expect((await edge(host, "/__service/health")).status).toBe(200)
  })

  it("after a rollback the edge serves bytes identical to the earlier deployment", async () => {
    const { slug, project, host, first } = await deployed()
    const before = await Promise.all(["/", "/app.js", "/logo.bin"].map((path) => edge(host, path)))
    await upload(slug, project, "v2-longer")
    expect((await edge(host, "/")).body.toString()).toBe("<h1>home v2-longer</h1>")
    const rolled = await api.post(
      `/v1/orgs/${slug}/projects/${project}/rollback`,
      { deploymentId: first.id },
      { token: suite.admin.token }
    )
    expect(rolled.status).toBe(200)
    const after = await Promise.all(["/", "/app.js", "/logo.bin"].map((path) => edge(host, path)))
    after.forEach((reply, i) => {
      expect(reply.status).toBe(200)
      expect(Buffer.compare(reply.body, before[i]!.body)).toBe(0)
      expect(reply.headers["etag"]).toBe(before[i]!.headers["etag"])
    })
  })

  it("password mode: 401 (a form for browsers) until the shared password is posted, then a host-bound cookie", async () => {
    const { slug, project, host } = await deployed()
    const set = await api.put(
      `/v1/orgs/${slug}/projects/${project}/access`,
      { mode: "password", password: "correct horse" },
      { token: suite.admin.token }
    )
    expect(set.status).toBe(200)
    const locked = await edge(host, "/app.js")
    expect(locked.status).toBe(401)
    expect(locked.json().code).toBe("unauthorized")
    const form = await edge(host, "/app.js", { headers: { accept: "text/html" } })
    expect(form.status).toBe(401)
    expect(form.body.toString()).toContain('action="/__service/access/password"')
    const post = (password: string) =>
      edge(host, "/__service/access/password", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ password, next: "/app.js" }).toString()
      })
    expect((await post("wrong password")).status).toBe(401)
    const ok = await post("correct horse")
    expect(ok.status).toBe(303)
    expect(ok.headers["location"]).toBe("/app.js")
    const cookie = (ok.headers["set-cookie"]![0] ?? "").split(";")[0]!
    expect(ok.headers["set-cookie"]![0]).toContain("HttpOnly")
    expect((await edge(host, "/app.js", { headers: { cookie } })).status).toBe(200)
    expect((await edge("other.apps.localhost", "/app.js", { headers: { cookie } })).status).toBe(404)
  })

  it("the Service-Access-Bypass header opens a protected deployment; a new secret voids the old; revoke closes it", async () => {
    const { slug, project, host } = await deployed()
    await api.put(`/v1/orgs/${slug}/projects/${project}/access`, { mode: "org" }, { token: suite.admin.token })
    const first = await api.post(`/v1/orgs/${slug}/projects/${project}/access/bypass`, undefined, {
      token: suite.admin.token
    })
    expect((await edge(host, "/", { headers: { "service-access-bypass": first.body.secret } })).status).toBe(200)
    const second = await api.post(`/v1/orgs/${slug}/projects/${project}/access/bypass`, undefined, {
      token: suite.admin.token
    })
    expect((await edge(host, "/", { headers: { "service-access-bypass": first.body.secret } })).status).toBe(401)
    expect((await edge(host, "/", { headers: { "service-access-bypass": second.body.secret } })).status).toBe(200)
    await api.delete(`/v1/orgs/${slug}/projects/${project}/access/bypass`, undefined, { token: suite.admin.token })
    expect((await edge(host, "/", { headers: { "service-access-bypass": second.body.secret } })).status).toBe(401)
  })

  it("org mode: members get in through a one-time authorize code and a cookie on that host; the code works once", async () => {
    const { slug, project, host } = await deployed()
    await api.put(`/v1/orgs/${slug}/projects/${project}/access`, { mode: "org" }, { token: suite.admin.token })
    expect((await edge(host, "/app.js")).status).toBe(401)
    const member = await suite.withRole(slug, "member")
    const authorized = await api.post("/v1/access/authorize", { to: host, next: "/app.js" }, { token: member.token })
    expect(authorized.status).toBe(200)
    const callback = new URL(authorized.body.url)
    expect(`${callback.protocol}//${callback.host}${callback.pathname}`).toBe(
      `https://${host}/__service/access/callback`
    )
    const exchanged = await edge(host, `${callback.pathname}${callback.search}`)
    expect(exchanged.status).toBe(303)
    expect(exchanged.headers["location"]).toBe("/app.js")
    const cookie = (exchanged.headers["set-cookie"]![0] ?? "").split(";")[0]!
    expect((await edge(host, "/app.js", { headers: { cookie } })).status).toBe(200)
    const replay = await edge(host, `${callback.pathname}${callback.search}`)
    expect(replay.status).toBe(403)
    // A member who leaves loses the pass at once.
    await api.delete(`/v1/orgs/${slug}/members/${member.userId}`, undefined, { token: suite.admin.token })
    expect((await edge(host, "/app.js", { headers: { cookie } })).status).toBe(401)
  })

  it("org mode admits members and admins only: a viewer's code is refused at the edge", async () => {
    const { slug, project, host } = await deployed()
    await api.put(`/v1/orgs/${slug}/projects/${project}/access`, { mode: "org" }, { token: suite.admin.token })
    const viewer = await suite.withRole(slug, "viewer")
    const authorized = await api.post("/v1/access/authorize", { to: host, next: "/" }, { token: viewer.token })
    expect(authorized.status).toBe(200)
    const callback = new URL(authorized.body.url)
    const exchanged = await edge(host, `${callback.pathname}${callback.search}`)
    expect(exchanged.status).toBe(403)
    expect(exchanged.headers["set-cookie"]).toBeUndefined()
  })

  it("a next beyond Latin-1 redirects percent-encoded, from the callback and from the password form", async () => {
    const { slug, project, host } = await deployed()
    await api.put(`/v1/orgs/${slug}/projects/${project}/access`, { mode: "org" }, { token: suite.admin.token })
    const authorized = await api.post(
      "/v1/access/authorize",
      { to: host, next: "/☃?q=é" },
      { token: suite.admin.token }
    )
    expect(authorized.status).toBe(200)
    const callback = new URL(authorized.body.url)
    const exchanged = await edge(host, `${callback.pathname}${callback.search}`)
    expect(exchanged.status).toBe(303)
    expect(exchanged.headers["location"]).toBe("/%E2%98%83?q=%C3%A9")
    await api.put(
      `/v1/orgs/${slug}/projects/${project}/access`,
      { mode: "password", password: "correct horse" },
      { token: suite.admin.token }
    )
    const posted = await edge(host, "/__service/access/password", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ password: "correct horse", next: "/☃" }).toString()
    })
    expect(posted.status).toBe(303)
    expect(posted.headers["location"]).toBe("/%E2%98%83")
  })

  it("protected files are Cache-Control private with Vary: Cookie; every answer nosniff with a referrer policy; the service's pages refuse framing", async () => {
    const { slug, project, host } = await deployed()
    const open = await edge(host, "/app.js")
    expect(open.headers["cache-control"]).toBe("public, max-age=0, must-revalidate")
    expect(open.headers["x-content-type-options"]).toBe("nosniff")
    expect(open.headers["referrer-policy"]).toBe("strict-origin-when-cross-origin")
    expect(open.headers["x-frame-options"]).toBeUndefined()
    await api.put(
      `/v1/orgs/${slug}/projects/${project}/access`,
      { mode: "password", password: "correct horse" },
      { token: suite.admin.token }
    )
    const form = await edge(host, "/app.js", { headers: { accept: "text/html" } })
    expect(form.status).toBe(401)
    expect(form.headers["x-frame-options"]).toBe("DENY")
    expect(form.headers["content-security-policy"]).toContain("frame-ancestors 'none'")
    expect(form.headers["x-content-type-options"]).toBe("nosniff")
    expect(form.headers["referrer-policy"]).toBe("no-referrer")
    const ok = await edge(host, "/__service/access/password", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ password: "correct horse", next: "/app.js" }).toString()
    })
    expect(ok.status).toBe(303)
    expect(ok.headers["x-frame-options"]).toBe("DENY")
    const setCookie = ok.headers["set-cookie"]![0]!
    expect(setCookie).toMatch(/^__Host-service_access=[^;]+; /)
    expect(setCookie).toContain("Secure")
    expect(setCookie).toContain("Path=/;")
    expect(setCookie).not.toMatch(/domain=/i)
    const cookie = setCookie.split(";")[0]!
    const file = await edge(host, "/app.js", { headers: { cookie } })
    expect(file.status).toBe(200)
    expect(file.headers["cache-control"]).toBe("private, max-age=0, must-revalidate")
    expect(file.headers["vary"]).toBe("Cookie")
    expect(file.headers["x-content-type-options"]).toBe("nosniff")
    const revalidated = await edge(host, "/app.js", {
      headers: { cookie, "if-none-match": file.headers["etag"] as string }
    })
    expect(revalidated.status).toBe(304)
    expect(revalidated.headers["cache-control"]).toBe("private, max-age=0, must-revalidate")
    expect(revalidated.headers["vary"]).toBe("Cookie")
  })

  it("a sign-in code presented on the wrong host is refused without being burned for its own host", async () => {
    const { slug, project, host } = await deployed()
    const other = await deployed()
    await api.put(`/v1/orgs/${slug}/projects/${project}/access`, { mode: "org" }, { token: suite.admin.token })
    const authorized = await api.post("/v1/access/authorize", { to: host, next: "/" }, { token: suite.admin.token })
    const callback = new URL(authorized.body.url)
    const elsewhere = await edge(other.host, `${callback.pathname}${callback.search}`)
    expect(elsewhere.status).toBe(403)
    expect(elsewhere.headers["set-cookie"]).toBeUndefined()
    const home = await edge(host, `${callback.pathname}${callback.search}`)
    expect(home.status).toBe(303)
    expect(home.headers["set-cookie"]![0]).toMatch(/^__Host-service_access=/)
  })

  it("password attempts are limited per client and host: the 11th within a minute is 429 with Retry-After", async () => {
    const { slug, project, host } = await deployed()
    const other = await deployed()
    for (const target of [{ slug, project }, other]) {
      await api.put(
        `/v1/orgs/${target.slug}/projects/${target.project}/access`,
        { mode: "password", password: "correct horse" },
        { token: suite.admin.token }
      )
    }
    for (let i = 0; i < 10; i++) {
      expect((await edge(host, "/__service/access/password", passwordPost("wrong guess"))).status).toBe(401)
    }
    const limited = await edge(host, "/__service/access/password", passwordPost("correct horse"))
    expect(limited.status).toBe(429)
    expect(limited.json().code).toBe("rate_limited")
    const wait = Number(limited.headers["retry-after"])
    expect(wait).toBeGreaterThanOrEqual(1)
    expect(wait).toBeLessThanOrEqual(60)
    const page = await edge(host, "/__service/access/password", {
      ...passwordPost("correct horse"),
      headers: { ...passwordPost("").headers, accept: "text/html" }
    })
    expect(page.status).toBe(429)
    expect(page.headers["retry-after"]).toBeDefined()
    // Another host keeps its own count.
    expect((await edge(other.host, "/__service/access/password", passwordPost("correct horse"))).status).toBe(303)
  })

  it("changing the shared password ends the passes issued under the old one; changing only the mode does not", async () => {
    const { slug, project, host } = await deployed()
    const setAccess = (body: object) =>
      api.put(`/v1/orgs/${slug}/projects/${project}/access`, body, { token: suite.admin.token })
    const passFor = async (password: string) => {
      const posted = await edge(host, "/__service/access/password", passwordPost(password))
      expect(posted.status).toBe(303)
      return posted.headers["set-cookie"]![0]!.split(";")[0]!
    }
    await setAccess({ mode: "password", password: "first password" })
    const first = await passFor("first password")
    expect((await edge(host, "/app.js", { headers: { cookie: first } })).status).toBe(200)
    await setAccess({ mode: "org" })
    await setAccess({ mode: "password" })
    expect((await edge(host, "/app.js", { headers: { cookie: first } })).status).toBe(200)
    await setAccess({ mode: "password", password: "second password" })
    expect((await edge(host, "/app.js", { headers: { cookie: first } })).status).toBe(401)
    const second = await passFor("second password")
    expect((await edge(host, "/app.js", { headers: { cookie: second } })).status).toBe(200)
    // Setting the same password again is a new one too: every pass so far ends.
    await setAccess({ mode: "password", password: "second password" })
    expect((await edge(host, "/app.js", { headers: { cookie: second } })).status).toBe(401)
  })

  it("a file asked for again is the same answer from the edge's memory: headers, 304, HEAD, the 404 page, then the next deployment's", async () => {
    const slug = await suite.newOrg()
    const project = unique("memo")
    const created = await api.post(`/v1/orgs/${slug}/projects`, { name: project }, { token: suite.admin.token })
    const host = created.body.hostname as string
    // `big.bin` is above what the edge keeps in memory: it streams through the edge app, the others do not.
    const big = new Uint8Array(300 * 1024).map((_, i) => (i * 31) % 251)
    const bundle = (version: string) =>
      Effect.runPromise(
        bundleOf([
          manifestEntry({ name: "site" }),
          { name: "assets/app.js", content: `console.log("${version}")` },
          { name: "assets/404.html", content: `<h1>lost ${version}</h1>` },
          { name: "assets/big.bin", content: big }
        ])
      )
    const deploy = async (version: string) => {
      const reply = await fetch(`${suite.server.url}/v1/orgs/${slug}/projects/${project}/deployments`, {
        method: "POST",
        headers: { authorization: `Bearer ${suite.admin.token}`, "content-type": "application/gzip" },
        body: await bundle(version)
      })
      expect(reply.status).toBe(201)
    }
    await deploy("v1")
    const withoutDate = (headers: Http.IncomingHttpHeaders) => {
      const { date: _date, ...rest } = headers
      return rest
    }
    const first = await edge(host, "/app.js")
    expect(first.status).toBe(200)
    expect(first.body.toString()).toBe('console.log("v1")')
    const etag = first.headers["etag"] as string
    for (let i = 0; i < 3; i++) {
      const again = await edge(host, "/app.js")
      expect(again.status).toBe(200)
      expect(again.body.toString()).toBe('console.log("v1")')
      expect(withoutDate(again.headers)).toEqual(withoutDate(first.headers))
    }
    // The edge app's own answer for a streamed file carries the same headers, by name.
    const streamed = await edge(host, "/big.bin")
    expect(streamed.status).toBe(200)
    expect(Buffer.compare(streamed.body, Buffer.from(big))).toBe(0)
    expect(Object.keys(withoutDate(streamed.headers)).sort()).toEqual(Object.keys(withoutDate(first.headers)).sort())
    expect(streamed.headers["content-type"]).toBe("application/octet-stream")
    expect(first.headers["content-length"]).toBe(String(first.body.byteLength))
    expect(first.headers["cache-control"]).toBe("public, max-age=0, must-revalidate")
    expect(first.headers["x-content-type-options"]).toBe("nosniff")
    expect(first.headers["referrer-policy"]).toBe("strict-origin-when-cross-origin")
    // 304 for the remembered ETag, alone or in a list; another ETag gets the file.
    for (const ifNoneMatch of [etag, `"other", ${etag}`]) {
      const revalidated = await edge(host, "/app.js", { headers: { "if-none-match": ifNoneMatch } })
      expect(revalidated.status).toBe(304)
      expect(revalidated.body.byteLength).toBe(0)
      expect(revalidated.headers["etag"]).toBe(etag)
      expect(revalidated.headers["cache-control"]).toBe("public, max-age=0, must-revalidate")
      expect(revalidated.headers["x-content-type-options"]).toBe("nosniff")
    }
    expect((await edge(host, "/app.js", { headers: { "if-none-match": '"other"' } })).status).toBe(200)
    for (let i = 0; i < 2; i++) {
      const head = await edge(host, "/app.js", { method: "HEAD" })
      expect(head.status).toBe(200)
      expect(head.headers["content-length"]).toBe(String(first.body.byteLength))
      expect(head.headers["etag"]).toBe(etag)
      expect(head.body.byteLength).toBe(0)
    }
    // The deployment's 404 page, every time, and never a 304 (it is not the file asked for).
    for (let i = 0; i < 2; i++) {
      const lost = await edge(host, "/nowhere", { headers: { "if-none-match": etag } })
      expect(lost.status).toBe(404)
      expect(lost.body.toString()).toBe("<h1>lost v1</h1>")
      expect(lost.headers["content-type"]).toBe("text/html; charset=utf-8")
    }
    // A GET with a body is answered the same (the edge app reads and drops the body).
    const withBody = await edge(host, "/app.js", { headers: { "content-type": "text/plain" }, body: "ignored" })
    expect(withBody.status).toBe(200)
    expect(withBody.body.toString()).toBe('console.log("v1")')
    // The next deployment is served on the next request, and so is a policy that closes the site.
    await deploy("v2")
    expect((await edge(host, "/app.js")).body.toString()).toBe('console.log("v2")')
    expect((await edge(host, "/nowhere")).body.toString()).toBe("<h1>lost v2</h1>")
    const closed = await api.put(
      `/v1/orgs/${slug}/projects/${project}/access`,
      { mode: "password", password: "now closed" },
      { token: suite.admin.token }
    )
    expect(closed.status).toBe(200)
    expect((await edge(host, "/app.js")).status).toBe(401)
  })
})

describe.each(backends)("the reference edge bounds password hashing (%s)", (_name, stores) => {
  const calls = { running: 0, most: 0 }
  const countingHasher = Layer.succeed(Access.PasswordHasher)({
    hash: (password) => Effect.succeed(`plain$${password}`),
    verify: (password, encoded) =>
      Effect.gen(function* () {
        calls.running += 1
        calls.most = Math.max(calls.most, calls.running)
        yield* Effect.sleep("150 millis")
        calls.running -= 1
        return encoded === `plain$${password}`
      })
  })
  const suite = useSuite(stores, {}, undefined, undefined, { passwordHasher: countingHasher })

  it(`at most ${Access.concurrentHashing} password checks hash at once, however many guesses arrive`, async () => {
    const slug = await suite.newOrg()
    const hosts: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const project = await suite.newProject(slug)
      await suite.api.put(
        `/v1/orgs/${slug}/projects/${project.name}/access`,
        { mode: "password", password: "correct horse" },
        { token: suite.admin.token }
      )
      hosts.push(project.hostname)
    }
    calls.most = 0
    const replies = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        edgeCall(
          suite.server.edgeUrl,
          hosts[i % hosts.length]!,
          "/__service/access/password",
          passwordPost("wrong guess")
        )
      )
    )
    expect(replies.map((reply) => reply.status)).toEqual(Array.from({ length: 12 }, () => 401))
    expect(calls.most).toBe(Access.concurrentHashing)
  })
})
