import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bin, buildBundle } from "./support/Cli.ts"

/** A worker using every add-on: `/put?key=`, `/get?key=`, `/list?prefix=`, `/delete?key=`, `/mail`, `/raw`, `/ai`, `/me`. */
const worker = `
const answer = async (run) => {
  try {
    return Response.json({ value: await run() })
  } catch (error) {
    return Response.json({ error: error.message, code: error.code ?? null }, { status: 500 })
  }
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    const key = url.searchParams.get("key")
    switch (url.pathname) {
      case "/put":
        return answer(() => env.storage.put(key, request.body))
      case "/get":
        return answer(async () => {
          const object = await env.storage.get(key)
          return object === null ? null : { key: object.key, size: object.size, text: await object.text() }
        })
      case "/head":
        return answer(() => env.storage.head(key))
      case "/list":
        return answer(async () => {
          const listed = await env.storage.list({ prefix: url.searchParams.get("prefix") ?? undefined })
          return { keys: listed.objects.map((object) => object.key), truncated: listed.truncated }
        })
      case "/delete":
        return answer(() => env.storage.delete(key))
      case "/mail":
        return answer(() =>
          env.email.send({ to: "friend@example.com", subject: "Hello from dev", text: "It works locally." })
        )
      case "/raw":
        return answer(() =>
          env.email.send(
            "From: " + url.searchParams.get("from") + "\\r\\nTo: friend@example.com\\r\\nSubject: raw\\r\\n\\r\\nbody\\r\\n"
          )
        )
      case "/ai":
        return answer(() => env.ai.chat({ model: "any", messages: [{ role: "user", content: "hi" }] }))
      case "/me":
        return Response.json({ user: await env.auth.user(request), cookie: request.headers.get("cookie") })
    }
    return new Response("not found", { status: 404 })
  }
}
`

interface Dev {
  readonly child: ChildProcess
  readonly url: string
  readonly output: () => string
}

/** Starts `hostplane dev` as the bundled bin with the real workerd; answers its URL and its stdout so far. */
const startDev = async (dir: string): Promise<Dev> => {
  const child = spawn(process.execPath, [bin, "dev", dir, "--port", "0"], {
    env: { PATH: process.env["PATH"] ?? "", HOME: Os.tmpdir() },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout!.on("data", (chunk) => (stdout += chunk))
  child.stderr!.on("data", (chunk) => (stderr += chunk))
  const deadline = Date.now() + 180_000
  while (Date.now() < deadline) {
    const url = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)?.[1]
    if (url !== undefined) return { child, url, output: () => stdout }
    if (child.exitCode !== null) throw new Error(`hostplane dev exited ${child.exitCode}: ${stderr}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  child.kill("SIGKILL")
  throw new Error(`hostplane dev did not start: ${stderr}`)
}

const stopDev = async (dev: Dev) => {
  if (dev.child.exitCode !== null) return
  const exited = new Promise((resolve) => dev.child.once("exit", resolve))
  dev.child.kill("SIGINT")
  await exited
}

const until = async <A>(what: string, probe: () => A | undefined, waitMs = 30_000): Promise<A> => {
  const deadline = Date.now() + waitMs
  while (Date.now() < deadline) {
    const value = probe()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** Add-ons under `hostplane dev` (docs/cli.md): local storage and outbox, a dev sign-in, AI refused. */
describe("hostplane dev add-ons", { timeout: 300_000 }, () => {
  let dir: string
  let dev: Dev
  const call = async (path: string, init?: RequestInit) => {
    const response = await fetch(`${dev.url}${path}`, init)
    return { status: response.status, body: (await response.json()) as Record<string, any> }
  }

  beforeAll(async () => {
    await buildBundle()
    dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-dev-addons-"))
    Fs.mkdirSync(Path.join(dir, "worker"))
    Fs.writeFileSync(
      Path.join(dir, "service.json"),
      JSON.stringify({ name: "addons", storage: true, email: true, ai: true, auth: true })
    )
    Fs.writeFileSync(Path.join(dir, "worker/index.js"), worker)
    dev = await startDev(dir)
  }, 300_000)
  afterAll(async () => {
    if (dev !== undefined) await stopDev(dev)
    if (dir !== undefined) Fs.rmSync(dir, { recursive: true, force: true })
  })

  it("env.storage puts, gets, lists and deletes objects in the folder's .hostplane/dev store, with the node's key rules", async () => {
    const put = await call("/put?key=notes/first.txt", { method: "POST", body: "hello storage" })
    expect(put.status).toBe(200)
    expect(put.body.value).toMatchObject({ key: "notes/first.txt", size: 13 })
    expect(typeof put.body.value.etag).toBe("string")
    expect((await call("/put?key=notes/second.txt", { method: "POST", body: "second one" })).body.value.size).toBe(10)
    // A key the node keeps escaped: `..` and empty segments are opaque, never a path.
    expect((await call("/put?key=../escape//x", { method: "POST", body: "odd" })).status).toBe(200)
    expect((await call("/get?key=notes/first.txt")).body.value).toEqual({
      key: "notes/first.txt",
      size: 13,
      text: "hello storage"
    })
    expect((await call("/get?key=missing")).body.value).toBeNull()
    expect((await call("/list?prefix=notes/")).body.value).toEqual({
      keys: ["notes/first.txt", "notes/second.txt"],
      truncated: false
    })
    expect((await call("/list")).body.value.keys).toEqual(["../escape//x", "notes/first.txt", "notes/second.txt"])
    expect((await call("/delete?key=notes/second.txt")).status).toBe(200)
    expect((await call("/head?key=notes/second.txt")).body.value).toBeNull()
    // Nothing is written outside the dev store, and the object's bytes are there as files.
    expect(Fs.existsSync(Path.join(dir, "escape"))).toBe(false)
    const stored = Fs.readdirSync(Path.join(dir, ".hostplane/dev/storage"), { recursive: true }).map(String)
    expect(stored.some((path) => path.includes("notes%252Ffirst%252Etxt"))).toBe(true)
    expect(Fs.readFileSync(Path.join(dir, ".hostplane/dev/.gitignore"), "utf8")).toBe("*\n")
    const tooLong = await call(`/put?key=${"k".repeat(1025)}`, { method: "POST", body: "x" })
    expect(tooLong.status).toBe(500)
    expect(tooLong.body.error).toMatch(/^invalid_key: /)
  })

  it("env.email writes the message to the outbox as .eml, prints one line, and refuses another From", async () => {
    const sent = await call("/mail")
    expect(sent.status).toBe(200)
    expect(sent.body.value.id).toMatch(/^mail_dev_/)
    expect(typeof sent.body.value.messageId).toBe("string")
    const outbox = Path.join(dir, ".hostplane/dev/outbox")
    const files = Fs.readdirSync(outbox).filter((name) => name.endsWith(".eml"))
    expect(files).toHaveLength(1)
    const message = Fs.readFileSync(Path.join(outbox, files[0]!), "utf8")
    expect(message).toMatch(/^From: dev@localhost\r\n/)
    expect(message).toContain("To: friend@example.com\r\n")
    expect(message).toContain("Subject: Hello from dev\r\n")
    expect(message).toContain(Buffer.from("It works locally.").toString("base64"))
    const line = await until("the mail line", () =>
      dev
        .output()
        .split("\n")
        .find((text) => text.startsWith("✉ mail"))
    )
    expect(line).toBe(`✉ mail  dev@localhost → friend@example.com  "Hello from dev"  ${Path.join(outbox, files[0]!)}`)

    const ownRaw = await call("/raw?from=dev@localhost")
    expect(ownRaw.status).toBe(200)
    const forged = await call("/raw?from=someone@example.com")
    expect(forged.status).toBe(500)
    expect(forged.body).toEqual({
      error: "from_not_allowed: From must be the project's address dev@localhost",
      code: "from_not_allowed"
    })
    expect(Fs.readdirSync(outbox).filter((name) => name.endsWith(".eml"))).toHaveLength(2)
  })

  it("env.ai rejects with not_available_in_dev", async () => {
    const ai = await call("/ai")
    expect(ai.status).toBe(500)
    expect(ai.body.code).toBe("not_available_in_dev")
    expect(ai.body.error).toMatch(/^not_available_in_dev: env\.ai\.chat\(\) runs only in a deployed project/)
  })

  it("env.auth resolves the dev sign-in of /__service/auth/login, whose cookie the worker never sees", async () => {
    expect((await call("/me", { headers: { cookie: "theme=dark" } })).body).toEqual({
      user: null,
      cookie: "theme=dark"
    })
    const login = await fetch(`${dev.url}/__service/auth/login/github?next=/me&email=ada@example.com`, {
      redirect: "manual"
    })
    expect(login.status).toBe(303)
    expect(login.headers.get("location")).toBe("/me")
    const cookie = login.headers.get("set-cookie")!.split(";")[0]!
    const me = await call("/me", { headers: { cookie: `theme=dark; ${cookie}` } })
    expect(me.body).toEqual({
      user: {
        id: expect.stringMatching(/^dev_[0-9a-f]{16}$/),
        email: "ada@example.com",
        name: "ada",
        provider: "github"
      },
      cookie: "theme=dark"
    })
    const whoami = await call("/__service/auth/me", { headers: { cookie } })
    expect(whoami.status).toBe(200)
    expect(whoami.body.email).toBe("ada@example.com")
    // A header a client sets is not a sign-in.
    expect((await call("/me", { headers: { "x-hostplane-user": cookie.split("=")[1]! } })).body.user).toBeNull()
    const logout = await fetch(`${dev.url}/__service/auth/logout`, { redirect: "manual", headers: { cookie } })
    expect(logout.status).toBe(303)
    expect(logout.headers.get("set-cookie")).toMatch(/^hostplane_dev_auth=; .*Max-Age=0/)
    expect((await call("/__service/auth/me")).status).toBe(401)
  })

  it("a second run of hostplane dev on the folder sees the stored objects", async () => {
    await stopDev(dev)
    dev = await startDev(dir)
    expect((await call("/get?key=notes/first.txt")).body.value).toEqual({
      key: "notes/first.txt",
      size: 13,
      text: "hello storage"
    })
    expect((await call("/list")).body.value.keys).toEqual(["../escape//x", "notes/first.txt"])
  })
})
