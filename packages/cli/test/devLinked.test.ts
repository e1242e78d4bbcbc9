import { BackupStoreMemory, DatabaseNodeMemory, layerMemory } from "@hostplane/testkit"
import { Layer } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { client, startTestServer, type TestServer, unique } from "../../http/test/support/TestServer.ts"
import { bin, buildBundle, hostplane } from "./support/Cli.ts"

const worker = `export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname === "/mail") {
      try {
        return Response.json(await env.email.send({ to: "friend@example.com", subject: "linked", text: "hi" }))
      } catch (error) {
        return Response.json({ error: error.message }, { status: 500 })
      }
    }
    return Response.json({ connectionString: env.db?.connectionString ?? null })
  }
}`

/** Starts `hostplane dev` as the bundled bin; answers its URL and the process. */
const startDev = async (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const child = spawn(process.execPath, [bin, "dev", ...args, "--port", "0"], {
    env: { PATH: process.env["PATH"] ?? "", HOME: Os.tmpdir(), ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout!.on("data", (chunk) => (stdout += chunk))
  child.stderr!.on("data", (chunk) => (stderr += chunk))
  const deadline = Date.now() + 180_000
  while (Date.now() < deadline) {
    const url = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)?.[1]
    if (url !== undefined) return { child, url }
    if (child.exitCode !== null) throw new Error(`hostplane dev exited ${child.exitCode}: ${stderr}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  child.kill("SIGKILL")
  throw new Error(`hostplane dev did not start: ${stderr}`)
}

const mailDomain = "mail.example.test"

describe("hostplane dev --linked against a server", { timeout: 240_000 }, () => {
  let server: TestServer
  let dir: string
  let env: Record<string, string>
  let org: string
  let project: string
  let token: string
  const children: Array<ChildProcess> = []
  const api = client(() => server.url)

  beforeAll(async () => {
    await buildBundle()
    server = await startTestServer(Layer.fresh(layerMemory), { mail: { mailDomain } }, Layer.empty, undefined, {
      providers: [Layer.mergeAll(DatabaseNodeMemory.layer, BackupStoreMemory.layer)]
    })
    token = (await api.login(unique("dev"))).token
    env = { HOSTPLANE_URL: server.url, HOSTPLANE_TOKEN: token }
    org = unique("org")
    expect((await api.post("/v1/orgs", { name: "Dev", slug: org }, { token })).status).toBe(201)
    const created = await api.post(`/v1/orgs/${org}/projects`, { name: unique("site") }, { token })
    expect(created.status).toBe(201)
    project = created.body.name
    dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-dev-linked-"))
    Fs.mkdirSync(Path.join(dir, "worker"))
    Fs.writeFileSync(Path.join(dir, "service.json"), JSON.stringify({ name: "linked", database: true, email: true }))
    Fs.writeFileSync(Path.join(dir, "worker/index.js"), worker)
  }, 300_000)
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
    await server?.close()
    if (dir !== undefined) Fs.rmSync(dir, { recursive: true, force: true })
  })

  it("before the database is granted, --linked refuses to start with the server's answer; after, env.db is the project's own connection", async () => {
    const refused = await hostplane(["dev", dir, "--port", "0", "--linked", "--org", org, "--project", project], {
      env
    })
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain("this project has no database")

    const base = `/v1/orgs/${org}/projects/${project}/database`
    expect((await api.post(base, undefined, { token })).status).toBe(200)
    const connect = await api.get(`${base}/connect`, { token })
    expect(connect.status).toBe(200)
    const linked = await startDev([dir, "--linked", "--org", org, "--project", project], env)
    children.push(linked.child)
    expect(await (await fetch(`${linked.url}/`)).json()).toEqual({ connectionString: connect.body.url })
    // Mail goes to the local outbox, from the linked project's own address (the one a deployed worker sends from).
    expect((await fetch(`${linked.url}/mail`)).status).toBe(200)
    const outbox = Path.join(dir, ".hostplane/dev/outbox")
    const [sent] = Fs.readdirSync(outbox)
    expect(Fs.readFileSync(Path.join(outbox, sent!), "utf8")).toMatch(
      new RegExp(`^From: ${project}\\.${org}@mail\\.example\\.test\\r\\n`)
    )

    // Without the flag dev reaches no server: env.db is present and empty, as before.
    const unlinked = await startDev([dir], { HOSTPLANE_URL: "http://127.0.0.1:9" })
    children.push(unlinked.child)
    expect(await (await fetch(`${unlinked.url}/`)).json()).toEqual({ connectionString: "" })
  })
})
