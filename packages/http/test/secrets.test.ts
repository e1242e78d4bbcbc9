import { Jobs, Kernel, Projects, Secrets, services } from "@hostplane/core"
import { Effect, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { auditOf, logCapture, type Reply, unique, useSuite } from "./support/TestServer.ts"

describe.each(backends)("spec 4.5 secrets (%s)", (_name, stores) => {
  // Every log line the server writes while handling requests, to check that no secret value reaches a log.
  const { lines: logs, layer: captureLogs } = logCapture()
  const suite = useSuite(stores, {}, captureLogs)
  const { api, newOrg, newProject, withRole } = suite

  const secretsOf = (slug: string, project: string) => `/v1/orgs/${slug}/projects/${project}/secrets`
  const everything = async (slug: string, replies: ReadonlyArray<Reply>) =>
    JSON.stringify({
      replies: replies.map((reply) => reply.body),
      audit: await suite.server.run(Effect.flatMap(Effect.service(Kernel.AuditLog), (audit) => audit.list({}))),
      org: await auditOf(suite.server, slug),
      logs
    })

  it("PUT secret is 200 SecretMeta { name, version, updatedAt }; every put raises version; GET lists names and versions", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const before = new Date().toISOString()
    const first = await api.put(
      `${secretsOf(slug, project.name)}/API_KEY`,
      { value: "first-value-9f2c" },
      { token: suite.admin.token }
    )
    const after = new Date().toISOString()
    expect(first.status).toBe(200)
    expect(Object.keys(first.body).sort()).toEqual(["name", "updatedAt", "version"])
    expect(first.body).toMatchObject({ name: "API_KEY", version: 1 })
    expect(new Date(first.body.updatedAt).toISOString()).toBe(first.body.updatedAt)
    expect(first.body.updatedAt >= before && first.body.updatedAt <= after, first.body.updatedAt).toBe(true)
    const second = await api.put(
      `${secretsOf(slug, project.name)}/API_KEY`,
      { value: "first-value-9f2c" },
      { token: suite.admin.token }
    )
    expect(second.body.version).toBe(2)
    await api.put(`${secretsOf(slug, project.name)}/A_OTHER`, { value: "x" }, { token: suite.admin.token })
    const list = await api.get(secretsOf(slug, project.name), { token: suite.admin.token })
    expect(list.status).toBe(200)
    expect(list.body).toEqual({
      items: [
        { name: "API_KEY", version: 2, updatedAt: second.body.updatedAt },
        { name: "A_OTHER", version: 1, updatedAt: expect.any(String) }
      ]
    })
  })

  it("the value is sealed with its key id and never appears in a response, an audit row or a log", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const value = `hunter2-${unique("v")}-p@ss`
    const member = await withRole(slug, "member")
    const replies = [
      await api.put(`${secretsOf(slug, project.name)}/DB_PASSWORD`, { value }, { token: member.token }),
      await api.put(`${secretsOf(slug, project.name)}/DB_PASSWORD`, { value }, { token: member.token }),
      await api.get(secretsOf(slug, project.name), { token: member.token }),
      await api.put(`${secretsOf(slug, project.name)}/DB`, { value }, { token: member.token }),
      await api.put(`${secretsOf(slug, project.name)}/bad-name`, { value }, { token: member.token }),
      await api.get(`/v1/orgs/${slug}/projects/${project.name}`, { token: member.token }),
      await api.get(`/v1/orgs/${slug}/projects/${project.name}/overview`, { token: member.token }),
      await api.delete(`${secretsOf(slug, project.name)}/DB_PASSWORD`, undefined, { token: member.token })
    ]
    expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200, 400, 400, 200, 200, 204])
    expect(logs.some((line) => line.includes("request"))).toBe(true)
    expect(await everything(slug, replies)).not.toContain(value)
    const events = (await auditOf(suite.server, slug)).filter((event) => event.action.startsWith("secret."))
    expect(events.map((event) => [event.action, event.actorId, event.target, event.data])).toEqual([
      ["secret.set", member.userId, project.id, { name: "DB_PASSWORD" }],
      ["secret.set", member.userId, project.id, { name: "DB_PASSWORD" }],
      ["secret.delete", member.userId, project.id, { name: "DB_PASSWORD" }]
    ])
  })

  it("the stored row holds only the sealed value and its key id; the core opens it for the runtime", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const value = `opened-${unique("v")}-é€😀`
    expect(
      (await api.put(`${secretsOf(slug, project.name)}/TOKEN`, { value }, { token: suite.admin.token })).status
    ).toBe(200)
    const { stored, opened, keyId } = await suite.server.run(
      Effect.gen(function* () {
        const sealer = yield* Secrets.Sealer
        return {
          keyId: sealer.activeKeyId,
          stored: yield* (yield* Secrets.SecretStore).listSealed(project.id),
          opened: yield* (yield* Secrets.Secrets).open(project.id)
        }
      }).pipe(Effect.provide(services))
    )
    expect(stored).toHaveLength(1)
    expect(stored[0]!.sealed.keyId).toBe(keyId)
    expect(JSON.stringify(stored)).not.toContain(value)
    expect(opened.map((secret) => [secret.name, secret.version])).toEqual([["TOKEN", 1]])
    expect(JSON.stringify(opened)).not.toContain(value)
    expect(String(opened[0]!.value)).toBe("<redacted>")
    expect(Redacted.value(opened[0]!.value)).toBe(value)
    const next = `next-${unique("v")}`
    expect(
      (await api.put(`${secretsOf(slug, project.name)}/TOKEN`, { value: next }, { token: suite.admin.token })).status
    ).toBe(200)
    const reopened = await suite.server.run(
      Effect.flatMap(Secrets.Secrets, (secrets) => secrets.open(project.id)).pipe(Effect.provide(services))
    )
    expect(reopened.map((secret) => [secret.name, secret.version, Redacted.value(secret.value)])).toEqual([
      ["TOKEN", 2, next]
    ])
  })

  it("a name outside ^[A-Za-z_][A-Za-z0-9_]{0,127}$ is 400 bad_request", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    for (const name of ["1ABC", "A-B", "A%20B", "%C3%84", "A.B", `A${"B".repeat(128)}`]) {
      const reply = await api.put(
        `${secretsOf(slug, project.name)}/${name}`,
        { value: "v" },
        { token: suite.admin.token }
      )
      expect(reply.status, name).toBe(400)
      expect(reply.body.code, name).toBe("bad_request")
    }
    // An empty name addresses the collection, where PUT is not an operation.
    const empty = await api.put(`${secretsOf(slug, project.name)}/`, { value: "v" }, { token: suite.admin.token })
    expect(empty.status).toBe(405)
    expect((await api.get(secretsOf(slug, project.name), { token: suite.admin.token })).body.items).toEqual([])
    for (const name of [`_${"x".repeat(127)}`, "_"]) {
      const reply = await api.put(
        `${secretsOf(slug, project.name)}/${name}`,
        { value: "v" },
        { token: suite.admin.token }
      )
      expect(reply.status, name).toBe(200)
    }
  })

  it("DB, ASSETS and any name starting SERVICE_ are 400 reserved_name, in any case", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    for (const name of [
      "DB",
      "ASSETS",
      "SERVICE_",
      "SERVICE_TOKEN",
      "db",
      "assets",
      "Assets",
      "Service_Token",
      "service_token"
    ]) {
      const reply = await api.put(
        `${secretsOf(slug, project.name)}/${name}`,
        { value: "v" },
        { token: suite.admin.token }
      )
      expect(reply.status, name).toBe(400)
      expect(reply.body.code, name).toBe("reserved_name")
    }
    for (const name of ["DBX", "MY_DB", "ASSETS_URL", "SERVICES", "X_SERVICE_Y"]) {
      const reply = await api.put(
        `${secretsOf(slug, project.name)}/${name}`,
        { value: "v" },
        { token: suite.admin.token }
      )
      expect(reply.status, name).toBe(200)
    }
    expect((await api.get(secretsOf(slug, project.name), { token: suite.admin.token })).body.items).toHaveLength(5)
  })

  it("the value is at most 64 KiB of UTF-8 and well-formed; a bad body is 400 bad_request without echoing the value", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const path = `${secretsOf(slug, project.name)}/BIG`
    expect((await api.put(path, { value: "k".repeat(65536) }, { token: suite.admin.token })).status).toBe(200)
    expect((await api.put(path, { value: "€".repeat(21845) }, { token: suite.admin.token })).status).toBe(200)
    expect((await api.put(path, { value: "" }, { token: suite.admin.token })).status).toBe(200)
    const tooBig = await api.put(path, { value: `${"q".repeat(65536)}Z` }, { token: suite.admin.token })
    expect(tooBig.status).toBe(400)
    expect(tooBig.body.code).toBe("bad_request")
    expect(tooBig.body.details.issues).toEqual([{ path: ["value"], message: "must be at most 65536 bytes of UTF-8" }])
    expect(JSON.stringify(tooBig.body)).not.toContain("qqqq")
    const multiByte = await api.put(path, { value: "€".repeat(21846) }, { token: suite.admin.token })
    expect(multiByte.status).toBe(400)
    const loneSurrogate = await api.put(path, undefined, { token: suite.admin.token, raw: '{"value":"ab\\ud800cd"}' })
    expect(loneSurrogate.status).toBe(400)
    expect(loneSurrogate.body.code).toBe("bad_request")
    for (const body of [{}, { value: 42 }, { value: null }]) {
      const reply = await api.put(path, body, { token: suite.admin.token })
      expect(reply.status).toBe(400)
      expect(reply.body.code).toBe("bad_request")
    }
    expect((await api.get(secretsOf(slug, project.name), { token: suite.admin.token })).body.items).toEqual([
      { name: "BIG", version: 3, updatedAt: expect.any(String) }
    ])
  })

  it("DELETE secret is 204 and audited secret.delete; an unknown name is 404 not_found", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    await api.put(`${secretsOf(slug, project.name)}/GONE`, { value: "v" }, { token: suite.admin.token })
    const reply = await api.delete(`${secretsOf(slug, project.name)}/GONE`, undefined, { token: suite.admin.token })
    expect(reply.status).toBe(204)
    expect(reply.body).toBe("")
    const again = await api.delete(`${secretsOf(slug, project.name)}/GONE`, undefined, { token: suite.admin.token })
    expect(again.status).toBe(404)
    expect(again.body.code).toBe("not_found")
    expect(
      (await api.delete(`${secretsOf(slug, project.name)}/gone`, undefined, { token: suite.admin.token })).status
    ).toBe(404)
    expect((await api.get(secretsOf(slug, project.name), { token: suite.admin.token })).body.items).toEqual([])
    const deletes = (await auditOf(suite.server, slug)).filter((event) => event.action === "secret.delete")
    expect(deletes.map((event) => event.data)).toEqual([{ name: "GONE" }])
    const recreated = await api.put(
      `${secretsOf(slug, project.name)}/GONE`,
      { value: "v" },
      { token: suite.admin.token }
    )
    expect(recreated.body.version).toBe(1)
  })

  const secretAt = async (slug: string) => {
    const project = await newProject(slug)
    await api.put(`${secretsOf(slug, project.name)}/K`, { value: "v" }, { token: suite.admin.token })
    return project.name
  }
  itChecksRoles(suite, {
    name: "GET secrets",
    min: "member",
    setup: secretAt,
    request: (slug, project) => ({ method: "GET", path: secretsOf(slug, project) }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "PUT secret",
    min: "member",
    setup: secretAt,
    request: (slug, project) => ({ method: "PUT", path: `${secretsOf(slug, project)}/K`, body: { value: "v" } }),
    ok: 200
  })
  itChecksRoles(suite, {
    name: "DELETE secret",
    min: "member",
    setup: secretAt,
    // Each caller deletes a secret of its own, so a success does not turn the next caller's into a 404.
    request: async (slug, project) => {
      const name = unique("K").replaceAll("-", "_").toUpperCase()
      await api.put(`${secretsOf(slug, project)}/${name}`, { value: "v" }, { token: suite.admin.token })
      return { method: "DELETE", path: `${secretsOf(slug, project)}/${name}` }
    },
    ok: 204
  })

  it("a foreign or missing project is 404 for all three, whatever the caller's role", async () => {
    const slug = await newOrg()
    const other = await newOrg()
    const foreign = await newProject(other)
    const member = await withRole(slug, "member")
    const calls = (token: string, org: string, name: string) =>
      Promise.all([
        api.get(secretsOf(org, name), { token }),
        api.put(`${secretsOf(org, name)}/K`, { value: "v" }, { token }),
        api.delete(`${secretsOf(org, name)}/K`, undefined, { token })
      ])
    for (const [token, org, name] of [
      [suite.admin.token, slug, foreign.name],
      [member.token, slug, foreign.name],
      [suite.admin.token, slug, "missing"]
    ] as const) {
      expect((await calls(token, org, name)).map((r) => [r.status, r.body.code])).toEqual([
        [404, "not_found"],
        [404, "not_found"],
        [404, "not_found"]
      ])
    }
  })

  it("on a project being deleted: outsider 404, viewer 403, a bad or reserved name or value 400, then 409 op_in_flight; nothing lands", async () => {
    // decisions.md part 12: authorization (404, 403), then the input (400), then the resource's state (409).
    const slug = await newOrg()
    const project = await newProject(slug)
    const member = await withRole(slug, "member")
    const viewer = await withRole(slug, "viewer")
    await api.put(`${secretsOf(slug, project.name)}/KEPT`, { value: "v" }, { token: member.token })
    expect(
      (
        await api.delete(
          `/v1/orgs/${slug}/projects/${project.name}`,
          { confirm: project.name },
          { token: suite.admin.token }
        )
      ).status
    ).toBe(202)
    const audited = (await auditOf(suite.server, slug)).length
    const put = (token: string, name: string, value = "v") =>
      api.put(`${secretsOf(slug, project.name)}/${name}`, { value }, { token })
    const answers = [
      await put(suite.outsider.token, "KEPT"),
      await put(suite.outsider.token, "DB"),
      await put(viewer.token, "KEPT"),
      await put(viewer.token, "1BAD"),
      await put(member.token, "1BAD"),
      await put(member.token, "A-B"),
      await put(member.token, "DB"),
      await put(member.token, "service_token"),
      await put(member.token, "KEPT", "q".repeat(65537)),
      await put(member.token, "KEPT"),
      await put(member.token, "NEW")
    ]
    expect(answers.map((reply) => [reply.status, reply.body.code])).toEqual([
      [404, "not_found"],
      [404, "not_found"],
      [403, "forbidden"],
      [403, "forbidden"],
      [400, "bad_request"],
      [400, "bad_request"],
      [400, "reserved_name"],
      [400, "reserved_name"],
      [400, "bad_request"],
      [409, "op_in_flight"],
      [409, "op_in_flight"]
    ])
    expect((await auditOf(suite.server, slug)).length).toBe(audited)
    expect((await api.get(secretsOf(slug, project.name), { token: member.token })).body.items).toEqual([
      { name: "KEPT", version: 1, updatedAt: expect.any(String) }
    ])
  })

  it("puts racing the writer's demotion to viewer land before it (audit order) or are 403 forbidden, never after", async () => {
    // The put authorizes, seals, then writes in one guarded statement that reads the role again under the org lock:
    // a put authorized before the demotion whose statement runs after it must be refused there. Three rounds, as
    // the interleaving is up to the scheduler (without the guard's role check, one round alone fails about 2 in 3).
    for (let round = 0; round < 3; round++) {
      const slug = await newOrg()
      const project = await newProject(slug)
      const member = await withRole(slug, "member")
      const put = (i: number) =>
        api.put(`${secretsOf(slug, project.name)}/RACE_${i}`, { value: "v" }, { token: member.token })
      const replies = await Promise.all([
        put(0),
        put(1),
        api.put(`/v1/orgs/${slug}/members/${member.userId}`, { role: "viewer" }, { token: suite.admin.token }),
        ...Array.from({ length: 37 }, (_, i) => put(i + 2))
      ])
      const [demoted] = replies.splice(2, 1)
      expect(demoted!.status).toBe(200)
      expect(
        replies.filter((reply) => reply.status !== 200 && !(reply.status === 403 && reply.body.code === "forbidden"))
      ).toEqual([])
      const events = (await auditOf(suite.server, slug)).filter(
        (event) => event.action === "member.role" || (event.action === "secret.set" && event.actorId === member.userId)
      )
      const demotedAt = events.findIndex((event) => event.action === "member.role")
      expect(events.slice(demotedAt + 1)).toEqual([])
      const landed = replies.filter((reply) => reply.status === 200).length
      expect(demotedAt).toBe(landed)
      const listed = (await api.get(secretsOf(slug, project.name), { token: suite.admin.token })).body.items
      expect(listed).toHaveLength(landed)
    }
  })

  it("deleting the project (the durable operation) removes its secrets", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    await api.put(`${secretsOf(slug, project.name)}/K`, { value: "v" }, { token: suite.admin.token })
    const started = await api.delete(
      `/v1/orgs/${slug}/projects/${project.name}`,
      { confirm: project.name },
      { token: suite.admin.token }
    )
    expect(started.status).toBe(202)
    await suite.server.run(Jobs.JobRunner.runOnce([Projects.projectDeleteHandler]))
    expect((await api.get(`/v1/orgs/${slug}/projects/${project.name}`, { token: suite.admin.token })).status).toBe(404)
    const left = await suite.server.run(
      Effect.flatMap(Effect.service(Secrets.SecretStore), (store) => store.listSealed(project.id))
    )
    expect(left).toEqual([])
  })
})
