import { ObjectStoreDisk } from "@hostplane/adapters-providers"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DevServer, startDevServer } from "../src/dev/index.ts"
import { workerdBinary } from "../src/index.ts"

const worker = `export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    try {
      if (url.pathname === "/put") return Response.json(await env.storage.put(url.searchParams.get("key"), request.body))
      if (url.pathname === "/list") {
        return Response.json((await env.storage.list()).objects.map((object) => [object.key, object.size]))
      }
      if (url.pathname === "/mail") {
        return Response.json(await env.email.send({ to: "a@example.com", subject: "hi", text: "x" }))
      }
      if (url.pathname === "/raw") {
        return Response.json(await env.email.send("From: dev@localhost\\r\\nTo: a@example.com\\r\\nSubject: s\\r\\n\\r\\nb"))
      }
      return new Response("no route", { status: 404 })
    } catch (error) {
      return Response.json({ message: error.message, code: error.code ?? null }, { status: 500 })
    }
  }
}`

/** The dev server's add-ons as `startDevServer` takes them: the node's storage binding's quota, the linked From. */
describe("hostplane dev add-ons over a given store, quota and address (real workerd)", () => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-dev-addons-"))
  const outbox = Path.join(dir, ".hostplane/dev/outbox")
  const lines: Array<string> = []
  let server: DevServer

  beforeAll(async () => {
    const objects = await Effect.runPromise(ObjectStoreDisk.make(Path.join(dir, ".hostplane/dev/storage")))
    Fs.mkdirSync(Path.join(dir, "worker"))
    Fs.writeFileSync(Path.join(dir, "service.json"), JSON.stringify({ name: "devaddons", storage: true, email: true }))
    Fs.writeFileSync(Path.join(dir, "worker/index.js"), worker)
    server = await startDevServer({
      dir,
      host: "127.0.0.1",
      port: 0,
      binary: workerdBinary(),
      print: (line) => void lines.push(line),
      objects,
      storageQuotaBytes: 10,
      outbox,
      mailFrom: "site.team@mail.example.com"
    })
  }, 180_000)
  afterAll(async () => {
    await server?.stop()
    Fs.rmSync(dir, { recursive: true, force: true })
  })

  const call = async (path: string, body?: string) => {
    const reply = await fetch(`${server.url}${path}`, { method: "POST", ...(body === undefined ? {} : { body }) })
    return { status: reply.status, body: (await reply.json()) as any }
  }

  it("a put past the quota rejects quota_exceeded and stores nothing; one within it is kept", async () => {
    expect((await call("/put?key=a", "123456")).body).toMatchObject({ key: "a", size: 6 })
    const over = await call("/put?key=b", "12345")
    expect(over.status).toBe(500)
    expect(over.body.code).toBe("quota_exceeded")
    expect(over.body.message).toMatch(/^quota_exceeded: the project's storage quota of 10 bytes would be passed/)
    // Replacing an object counts its old bytes as freed.
    expect((await call("/put?key=a", "1234567890")).body.size).toBe(10)
    expect((await call("/list")).body).toEqual([["a", 10]])
  })

  it("mail goes out from the given address; a raw message from the default one is refused", async () => {
    const sent = await call("/mail")
    expect(sent.status).toBe(200)
    const [file] = Fs.readdirSync(outbox)
    expect(Fs.readFileSync(Path.join(outbox, file!), "utf8")).toMatch(/^From: site\.team@mail\.example\.com\r\n/)
    expect(lines.filter((line) => line.startsWith("✉ mail  site.team@mail.example.com → a@example.com"))).toHaveLength(
      1
    )
    const refused = await call("/raw")
    expect(refused.body).toEqual({
      message: "from_not_allowed: From must be the project's address site.team@mail.example.com",
      code: "from_not_allowed"
    })
    expect(Fs.readdirSync(outbox)).toHaveLength(1)
  })
})
