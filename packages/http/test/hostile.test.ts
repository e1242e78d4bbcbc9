import * as Http from "node:http"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { unique, useSuite } from "./support/TestServer.ts"

/** A request with raw bytes as its body (fetch would re-encode a string as UTF-8). */
const rawRequest = (base: string, method: string, path: string, headers: Record<string, string>, body?: Uint8Array) =>
  new Promise<{ status: number; body: { code: string; details?: { issues: Array<{ path: Array<string> }> } } }>(
    (resolve, reject) => {
      const url = new URL(base)
      const request = Http.request({ host: url.hostname, port: url.port, path, method, headers }, (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () =>
          resolve({ status: response.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString() || "null") })
        )
      })
      request.on("error", reject)
      request.end(body)
    }
  )

describe.each(backends)("hostile input on /v1 (%s)", (_name, stores) => {
  const suite = useSuite(stores)
  const { api } = suite
  const namesOf = async () =>
    ((await api.get("/v1/orgs", { token: suite.admin.token })).body.items as Array<{ slug: string; name: string }>).map(
      (org) => org.name
    )

  it("a NUL in any JSON string (key, nested value, duplicate key) is 400 bad_request naming its path; nothing is stored", async () => {
    const token = suite.admin.token
    const name = unique("nul")
    const bodies = [
      `{"name":"${name}\\u0000b"}`,
      `{"name":"${name}","slug":"a\\u0000"}`,
      `{"name":"${name}","name":"${name}\\u0000"}`,
      `{"name":"${name}","extra":{"deep":["ok","\\u0000"]}}`,
      `{"name":"${name}","ke\\u0000y":1}`
    ]
    for (const raw of bodies) {
      const reply = await api.call("POST", "/v1/orgs", { token, raw })
      expect(reply.status, raw).toBe(400)
      expect(reply.body.code).toBe("bad_request")
      expect(reply.body.details.issues[0].message).toContain("NUL")
    }
    expect((await api.post("/v1/orgs", { name: "a\u0000b" }, { token })).body.details.issues).toEqual([
      { path: ["name"], message: expect.stringContaining("NUL") }
    ])
    const slug = await suite.newOrg()
    expect((await api.patch(`/v1/orgs/${slug}`, { name: "a\u0000b" }, { token })).status).toBe(400)
    expect(await namesOf()).not.toContain(expect.stringContaining("\u0000"))
  })

  it("a NUL or malformed escape in a path segment or query value is 400 bad_request, not a 500", async () => {
    const token = suite.admin.token
    const slug = await suite.newOrg()
    for (const path of [
      "/v1/orgs/a%00b/projects",
      `/v1/orgs/${slug}/projects/a%00b`,
      `/v1/orgs/${slug}/projects/%E0%A4%A`,
      `/v1/orgs/${slug}/projects/%ED%A0%80`,
      `/v1/orgs/${slug}/notifications?limit=1%00`,
      "/v1/auth/idp/start?redirect=http%3A%2F%2Flocalhost%3A8080%2F%00"
    ]) {
      const reply = await api.get(path, { token })
      expect(reply.status, path).toBe(400)
      expect(reply.body.code).toBe("bad_request")
    }
  })

  it("a JSON body that is not UTF-8 is 400, not stored with replacement characters", async () => {
    const name = unique("latin")
    const body = Buffer.concat([Buffer.from(`{"name":"${name}`), Buffer.from([0xe9, 0xff]), Buffer.from('"}')])
    const reply = await rawRequest(
      suite.server.url,
      "POST",
      "/v1/orgs",
      { authorization: `Bearer ${suite.admin.token}`, "content-type": "application/json" },
      body
    )
    expect(reply.status).toBe(400)
    expect(reply.body.code).toBe("bad_request")
    expect(reply.body.details?.issues[0]?.path).toEqual(["body"])
    expect((await namesOf()).some((org) => org.startsWith(name))).toBe(false)
  })

  it("an unpaired surrogate in a JSON string is 400 (authorize's next included), not a 500", async () => {
    const token = suite.admin.token
    const slug = await suite.newOrg()
    const project = await suite.newProject(slug)
    const lone = await api.call("POST", "/v1/access/authorize", {
      token,
      raw: `{"to":"${project.hostname}","next":"/\\ud800"}`
    })
    expect(lone.status).toBe(400)
    expect(lone.body.details.issues).toEqual([{ path: ["next"], message: expect.stringContaining("surrogate") }])
    // A character beyond Latin-1 is fine: it travels percent-encoded in the callback URL.
    const snowman = await api.post("/v1/access/authorize", { to: project.hostname, next: "/☃" }, { token })
    expect(snowman.status).toBe(200)
    expect(new URL(snowman.body.url).searchParams.get("next")).toBe("/☃")
  })

  it("deeply nested JSON, a wrong content type and a body on GET get 4xx or are ignored, never a 500", async () => {
    const token = suite.admin.token
    const deep = await api.call("POST", "/v1/orgs", { token, raw: "[".repeat(200_000) + "]".repeat(200_000) })
    expect(deep.status).toBe(400)
    const deepField = await api.call("POST", "/v1/orgs", {
      token,
      raw: `{"name":"x","extra":${'{"a":'.repeat(50_000)}1${"}".repeat(50_000)}}`
    })
    expect(deepField.status).toBe(201)
    const text = await api.call("POST", "/v1/orgs", {
      token,
      raw: '{"name":"x"}',
      headers: { "content-type": "text/plain" }
    })
    expect(text.status).toBe(415)
    expect(text.body.code).toBe("unsupported_media_type")
    const getBody = Buffer.from('{"a":"\\u0000"}')
    const withBody = await rawRequest(
      suite.server.url,
      "GET",
      "/v1/orgs",
      {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        "content-length": String(getBody.length)
      },
      getBody
    )
    expect(withBody.status).toBe(200)
    const huge = await api.get(`/v1/orgs/${"a".repeat(5000)}/projects`, { token })
    expect(huge.status).toBe(404)
  })

  it("bad input on the 4.1-4.3 routes (ids, tokens, bodies) is 4xx with its code, never a 500, and stores nothing", async () => {
    const token = suite.admin.token
    const slug = await suite.newOrg()
    const project = await suite.newProject(slug)
    const member = await suite.withRole(slug, "member")
    const at = `/v1/orgs/${slug}`
    const state = async () =>
      JSON.stringify(
        await Promise.all(
          [`${at}/members`, `${at}/invites`, `${at}/projects`, `${at}/projects/${project.name}/deployments`].map(
            async (path) => (await api.get(path, { token })).body
          )
        )
      )
    const before = await state()
    const latin = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xe9, 0xff]), Buffer.from('"}')])
    const json = { authorization: `Bearer ${token}`, "content-type": "application/json" }
    const cases: ReadonlyArray<readonly [string, string, unknown, number, string]> = [
      ["GET", "/v1/invites/%FF", undefined, 400, "bad_request"],
      ["GET", "/v1/invites/a%00b", undefined, 400, "bad_request"],
      ["POST", "/v1/invites/%E0%A4%A/accept", undefined, 400, "bad_request"],
      ["POST", "/v1/invites/a%00/accept", undefined, 400, "bad_request"],
      ["POST", `/v1/invites/${"y".repeat(43)}/accept`, undefined, 404, "not_found"],
      ["DELETE", `${at}/invites/%FF`, undefined, 400, "bad_request"],
      ["DELETE", `${at}/invites/inv_%00`, undefined, 400, "bad_request"],
      ["DELETE", `${at}/invites/inv_unknown`, undefined, 404, "not_found"],
      ["PUT", `${at}/members/usr_%00`, { role: "member" }, 400, "bad_request"],
      ["PUT", `${at}/members/usr_unknown`, { role: "member" }, 404, "not_found"],
      ["DELETE", `${at}/members/%E0%A4%A`, undefined, 400, "bad_request"],
      ["DELETE", `${at}/members/usr_unknown`, undefined, 404, "not_found"],
      ["GET", `${at}/operations/%FF`, undefined, 400, "bad_request"],
      ["GET", `${at}/operations/op_unknown`, undefined, 404, "not_found"],
      ["PUT", `${at}/members/${member.userId}`, { role: "admin\u0000" }, 400, "bad_request"],
      ["PUT", `${at}/members/${member.userId}`, { role: 1 }, 400, "bad_request"],
      ["POST", `${at}/members`, { provider: "dev\u0000", subject: "x", role: "member" }, 400, "bad_request"],
      [
        "POST",
        `${at}/members`,
        { provider: "dev", subject: "s".repeat(100_000), role: "member" },
        404,
        "user_not_found"
      ],
      ["POST", `${at}/invites`, { email: "a\u0000@example.com", role: "member" }, 400, "bad_request"],
      ["POST", `${at}/invites`, { email: `${"a".repeat(400)}@example.com`, role: "member" }, 400, "bad_request"],
      ["POST", `${at}/projects/${project.name}/rollback`, { deploymentId: "dep_\u0000" }, 400, "bad_request"],
      ["POST", `${at}/projects/${project.name}/rollback`, { deploymentId: 5 }, 400, "bad_request"],
      ["POST", `${at}/projects/${project.name}/rollback`, { deploymentId: "d".repeat(100_000) }, 404, "not_found"],
      ["POST", `${at}/projects/${project.name}/rollback`, { deploymentId: "dep_unknown" }, 404, "not_found"],
      ["DELETE", `${at}/projects/${project.name}`, { confirm: "\u0000" }, 400, "bad_request"],
      ["DELETE", `${at}/projects/${project.name}`, { confirm: 5 }, 400, "bad_request"],
      ["DELETE", at, { confirm: "x".repeat(100_000) }, 400, "bad_request"],
      ["POST", "/v1/auth/dev/login", { subject: "ok", email: "e".repeat(100_000) }, 400, "bad_request"],
      ["GET", "/v1/auth/idp/callback?state=%FF", undefined, 400, "bad_request"],
      ["GET", `/v1/auth/idp/start?redirect=${"r".repeat(5000)}`, undefined, 400, "bad_request"]
    ]
    for (const [method, path, body, status, code] of cases) {
      const reply = await api.call(method, path, { token, body })
      expect([method, path.slice(0, 80), reply.status, reply.body.code]).toEqual([
        method,
        path.slice(0, 80),
        status,
        code
      ])
    }
    // A body that is not UTF-8, or over 1 MiB, on every 4.1-4.3 route that takes one.
    for (const [method, path] of [
      ["PATCH", at],
      ["POST", `${at}/members`],
      ["PUT", `${at}/members/${member.userId}`],
      ["POST", `${at}/invites`],
      ["POST", `${at}/projects`],
      ["POST", `${at}/projects/${project.name}/rollback`],
      ["POST", "/v1/auth/dev/login"]
    ] as const) {
      const broken = await rawRequest(
        suite.server.url,
        method,
        path,
        { ...json, "content-length": String(latin.length) },
        latin
      )
      expect([method, path, broken.status, broken.body.code]).toEqual([method, path, 400, "bad_request"])
      const big = Buffer.from(JSON.stringify({ name: "x", pad: "p".repeat(3 * 1024 * 1024) }))
      const tooBig = await rawRequest(
        suite.server.url,
        method,
        path,
        { ...json, "content-length": String(big.length) },
        big
      )
      expect([method, path, tooBig.status, tooBig.body.code]).toEqual([method, path, 413, "payload_too_large"])
    }
    expect(await state()).toBe(before)
  })
})

describe.each(backends)("hostile names and numbers (%s)", (_name, stores) => {
  const suite = useSuite(stores, {
    settings: { appDomain: "hostplane.localhost", publicUrl: "http://console.hostplane.localhost:8080" },
    mail: { mailDomain: "mail.hostplane.localhost" }
  })
  const { api } = suite

  it("a personal org stays one-person: member add and invite create are 409 personal_org", async () => {
    const token = suite.admin.token
    const me = await api.get("/v1/me", { token })
    const personal = me.body.orgs.find((org: { personal: boolean }) => org.personal).slug as string
    const added = await api.post(
      `/v1/orgs/${personal}/members`,
      { provider: "dev", subject: suite.outsider.subject, role: "member" },
      { token }
    )
    expect(added.status).toBe(409)
    expect(added.body.code).toBe("personal_org")
    const invited = await api.post(
      `/v1/orgs/${personal}/invites`,
      { email: "friend@example.test", role: "viewer" },
      { token }
    )
    expect(invited.status).toBe(409)
    expect(invited.body.code).toBe("personal_org")
    expect((await api.get(`/v1/orgs/${personal}/members`, { token })).body.items).toHaveLength(1)
    expect((await api.get(`/v1/orgs/${personal}/invites`, { token })).body.items).toEqual([])
  })

  it("org display names and project names refuse control characters (400 bad_request)", async () => {
    const token = suite.admin.token
    for (const name of ["line\nbreak", "bell\u0007", "esc\u001b[31m", "c1\u0085", "bidi\u202egnp.exe"]) {
      const created = await api.post("/v1/orgs", { name }, { token })
      expect(created.status, JSON.stringify(name)).toBe(400)
      expect(created.body.code).toBe("bad_request")
    }
    const slug = await suite.newOrg()
    expect((await api.patch(`/v1/orgs/${slug}`, { name: "tab\there" }, { token })).status).toBe(400)
    expect((await api.patch(`/v1/orgs/${slug}`, { name: "Ünïcode 組織 ok" }, { token })).status).toBe(200)
    expect((await api.post(`/v1/orgs/${slug}/projects`, { name: "site\n" }, { token })).status).toBe(400)
  })

  it("a profile name with controls or over 100 characters still makes a valid personal org display name", async () => {
    const session = await api.login(unique("profile"), { name: `Mallory\u001b[2J\nAdmin ${"x".repeat(150)}` })
    const me = await api.get("/v1/me", { token: session.token })
    const personal = me.body.orgs.find((org: { personal: boolean }) => org.personal)
    expect(personal.name).toMatch(/^Mallory \[2J Admin x+$/)
    expect(Array.from(personal.name as string).length).toBe(100)
    // The name it got is one the API itself accepts on rename.
    const renamed = await api.patch(`/v1/orgs/${personal.slug}`, { name: personal.name }, { token: session.token })
    expect(renamed.status).toBe(200)
  })

  it("?limit out of 1..200 or not an integer is 400 on every paged list; 1 and 200 are fine", async () => {
    const token = suite.admin.token
    const slug = await suite.newOrg()
    const project = await suite.newProject(slug)
    for (const path of [`/v1/orgs/${slug}/notifications`, `/v1/orgs/${slug}/projects/${project.name}/deployments`]) {
      for (const limit of ["-1", "0", "201", "1.5", "1e3", "abc", "", "99999999999999999999"]) {
        const reply = await api.get(`${path}?limit=${limit}`, { token })
        expect(reply.status, `${path}?limit=${limit}`).toBe(400)
        expect(reply.body.code).toBe("bad_request")
      }
      expect((await api.get(`${path}?limit=1`, { token })).status).toBe(200)
      expect((await api.get(`${path}?limit=200`, { token })).status).toBe(200)
    }
  })

  it("a project whose default hostname is one of the service's own hostnames is 409 hostname_taken", async () => {
    const token = suite.admin.token
    const slug = await suite.newOrg()
    // fallback.<app domain>, the name servers, the public URL's host and the mail domain.
    for (const name of ["fallback", "ns1", "ns2", "console", "mail"]) {
      const reply = await api.post(`/v1/orgs/${slug}/projects`, { name }, { token })
      expect(reply.status, name).toBe(409)
      expect(reply.body.code).toBe("hostname_taken")
    }
    expect((await api.get(`/v1/orgs/${slug}/projects`, { token })).body.items).toEqual([])
    expect((await api.post(`/v1/orgs/${slug}/projects`, { name: "fallback2" }, { token })).status).toBe(201)
  })

  it("a name the org already uses is 409 project_name_taken even at the project limit", async () => {
    const token = suite.admin.token
    const slug = await suite.newOrg()
    const names: Array<string> = []
    for (let i = 0; i < 3; i++) names.push((await suite.newProject(slug)).name)
    const again = await api.post(`/v1/orgs/${slug}/projects`, { name: names[0] }, { token })
    expect(again.status).toBe(409)
    expect(again.body.code).toBe("project_name_taken")
    const fourth = await api.post(`/v1/orgs/${slug}/projects`, { name: unique("site") }, { token })
    expect(fourth.status).toBe(409)
    expect(fourth.body.code).toBe("project_limit")
  })
})
