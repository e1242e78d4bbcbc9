import { Jobs, Projects } from "@hostplane/core"
import { bundleOf, manifestEntry, sampleEntries } from "@hostplane/testkit/deployments/BundleFixtures"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { auditOf, type Reply, unique, useSuite } from "./support/TestServer.ts"

const bundle = (name: string) => Effect.runPromise(bundleOf([...sampleEntries.slice(1), manifestEntry({ name })]))

/** The write envelope seen through HTTP: once a project's delete is accepted, no write to it lands. */
describe.each(backends)("writes to a project being deleted (%s)", (_name, stores) => {
  const suite = useSuite(stores)
  const { api, newOrg } = suite
  const base = (slug: string, project: string) => `/v1/orgs/${slug}/projects/${project}`
  const token = () => suite.admin.token
  const upload = async (slug: string, project: string, bytes: Uint8Array): Promise<Reply> => {
    const response = await fetch(`${suite.server.url}${base(slug, project)}/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${token()}`, "content-type": "application/gzip" },
      body: bytes
    })
    const text = await response.text()
    return { status: response.status, headers: response.headers, body: text === "" ? text : JSON.parse(text) }
  }
  const runOperations = () => suite.server.run(Jobs.JobRunner.runOnce([Projects.projectDeleteHandler]))

  it("after DELETE project is accepted every project write is 409 op_in_flight and changes nothing; reads answer as before, then 404", async () => {
    const slug = await newOrg()
    const { name: project } = await suite.newProject(slug)
    const at = base(slug, project)
    const custom = `www.${unique("gone")}.example`
    expect((await api.put(`${at}/secrets/KEPT`, { value: "one" }, { token: token() })).status).toBe(200)
    expect((await api.post(`${at}/hostnames`, { name: custom }, { token: token() })).status).toBe(200)
    const v1 = await upload(slug, project, await bundle("one"))
    expect(v1.status).toBe(201)
    expect((await upload(slug, project, await bundle("two"))).status).toBe(201)
    expect(
      (await api.put(`${at}/access`, { mode: "password", password: "correct horse" }, { token: token() })).status
    ).toBe(200)
    expect((await api.post(`${at}/access/bypass`, undefined, { token: token() })).status).toBe(200)
    const before = {
      project: (await api.get(at, { token: token() })).body,
      secrets: (await api.get(`${at}/secrets`, { token: token() })).body,
      hostnames: (await api.get(`${at}/hostnames`, { token: token() })).body,
      deployments: (await api.get(`${at}/deployments`, { token: token() })).body,
      access: (await api.get(`${at}/access`, { token: token() })).body
    }

    expect((await api.delete(at, { confirm: project }, { token: token() })).status).toBe(202)
    const audited = (await auditOf(suite.server, slug)).length

    const writes: ReadonlyArray<readonly [string, () => Promise<Reply>]> = [
      ["secret put (new)", () => api.put(`${at}/secrets/NEW`, { value: "two" }, { token: token() })],
      ["secret put (existing)", () => api.put(`${at}/secrets/KEPT`, { value: "two" }, { token: token() })],
      ["secret delete", () => api.delete(`${at}/secrets/KEPT`, undefined, { token: token() })],
      [
        "hostname add",
        () => api.post(`${at}/hostnames`, { name: `www.${unique("late")}.example` }, { token: token() })
      ],
      ["hostname delete", () => api.delete(`${at}/hostnames/${custom}`, undefined, { token: token() })],
      ["hostname verify", () => api.post(`${at}/hostnames/${custom}/verify`, undefined, { token: token() })],
      ["deployment upload", async () => upload(slug, project, await bundle("three"))],
      ["deployment rollback", () => api.post(`${at}/rollback`, { deploymentId: v1.body.id }, { token: token() })],
      ["access set", () => api.put(`${at}/access`, { mode: "public" }, { token: token() })],
      ["access bypass new", () => api.post(`${at}/access/bypass`, undefined, { token: token() })],
      ["access bypass revoke", () => api.delete(`${at}/access/bypass`, undefined, { token: token() })]
    ]
    for (const [label, write] of writes) {
      const reply = await write()
      expect([label, reply.status, reply.body.code]).toEqual([label, 409, "op_in_flight"])
    }
    expect((await auditOf(suite.server, slug)).length).toBe(audited)

    // Until the delete has run, reads answer exactly as before it was accepted.
    expect((await api.get(at, { token: token() })).body).toEqual(before.project)
    expect((await api.get(`${at}/secrets`, { token: token() })).body).toEqual(before.secrets)
    expect((await api.get(`${at}/hostnames`, { token: token() })).body).toEqual(before.hostnames)
    expect((await api.get(`${at}/deployments`, { token: token() })).body).toEqual(before.deployments)
    expect((await api.get(`${at}/access`, { token: token() })).body).toEqual(before.access)

    await runOperations()
    for (const path of ["", "/secrets", "/hostnames", "/deployments", "/access", "/overview"]) {
      expect([path, (await api.get(`${at}${path}`, { token: token() })).status]).toEqual([path, 404])
    }
  })

  it("writes racing a delete either land before it is accepted or are 409 op_in_flight, never after", async () => {
    const slug = await newOrg()
    const { name: project } = await suite.newProject(slug)
    const at = base(slug, project)
    const writes = Array.from({ length: 24 }, (_, i) => () => {
      switch (i % 3) {
        case 0:
          return api.put(`${at}/secrets/RACE_${i}`, { value: "v" }, { token: token() })
        case 1:
          return api.post(`${at}/hostnames`, { name: `www.${unique(`race${i}`)}.example` }, { token: token() })
        default:
          return api.post(`${at}/access/bypass`, undefined, { token: token() })
      }
    })
    const replies = await Promise.all([
      ...writes.slice(0, 12).map((write) => write()),
      api.delete(at, { confirm: project }, { token: token() }),
      ...writes.slice(12).map((write) => write())
    ])
    const deleted = replies[12]!
    const answers = replies.filter((reply) => reply !== deleted)
    expect(deleted.status).toBe(202)
    expect(answers.every((reply) => reply.status === 200 || reply.body.code === "op_in_flight")).toBe(true)
    // Writes commit under the org lock with their audit row, so the log's order is the order they were accepted in.
    const actions = (await auditOf(suite.server, slug)).map((event) => event.action)
    const accepted = actions.indexOf("project.delete")
    const landed = ["secret.set", "hostname.add", "access.bypass.new"]
    expect(actions.slice(accepted + 1).filter((action) => landed.includes(action))).toEqual([])
    expect(actions.filter((action) => landed.includes(action))).toHaveLength(
      answers.filter((reply) => reply.status === 200).length
    )
    const secrets = (await api.get(`${at}/secrets`, { token: token() })).body.items.map(
      (item: { name: string }) => item.name
    )
    // answers[i] is the reply to writes[i]: every third one a secret put.
    expect(secrets).toHaveLength(answers.filter((reply, i) => reply.status === 200 && i % 3 === 0).length)
  })
})
