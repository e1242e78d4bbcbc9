import { ObjectStoreDisk } from "@hostplane/adapters-providers"
import { manifestEntry } from "@hostplane/testkit"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { keyOfStoredForm, storedFormOf } from "../src/bindings/Storage.ts"
import { callBinding, envOf } from "./support/BindingsWorker.ts"
import { edgeCall, eventually, useRuntimeSuite } from "./support/RuntimeServer.ts"

const folder = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-node-storage-"))
afterAll(() => Fs.rmSync(folder, { recursive: true, force: true }))

/** The free plan's quota (decisions.md part 3). */
const quota = 1024 * 1024 * 1024

/** `/put?key=&kind=` stores the request body as the kind of value named; `/get?key=` reads an object back. */
const storageWorker = `
const valueOf = async (kind, request) => {
  if (kind === "string") return await request.text()
  if (kind === "buffer") return await request.arrayBuffer()
  if (kind === "typed") return new Uint8Array(await request.arrayBuffer())
  if (kind === "blob") return new Blob([await request.arrayBuffer()])
  if (kind === "stream") return request.body
  if (kind === "object") return { not: "a value" }
  throw new Error("no kind " + kind)
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    const key = url.searchParams.get("key")
    try {
      if (url.pathname === "/env") return Response.json({ keys: Object.keys(env).sort(), db: null })
      if (url.pathname === "/put") {
        const object = await env.storage.put(key, await valueOf(url.searchParams.get("kind"), request))
        return Response.json({ value: { ...object, uploaded: object.uploaded.toISOString() } })
      }
      if (url.pathname === "/get") {
        const object = await env.storage.get(key)
        if (object === null) return Response.json({ value: null })
        const as = url.searchParams.get("as") ?? "text"
        const body = as === "json" ? await object.json() : as === "bytes" ? (await object.arrayBuffer()).byteLength : await object.text()
        return Response.json({ value: { key: object.key, size: object.size, etag: object.etag, uploaded: object.uploaded.toISOString(), body } })
      }
      if (url.pathname === "/until-refused") {
        // Keeps calling from this invocation (loaded before any revoke) until the node refuses, for 20 s at most.
        const deadline = Date.now() + 20000
        while (Date.now() < deadline) {
          try {
            await env.storage.head("k")
          } catch (error) {
            return Response.json({ error: { message: String(error.message), code: error.code ?? null } })
          }
          await new Promise((resolve) => setTimeout(resolve, 200))
        }
        return Response.json({ value: "never refused" })
      }
      if (url.pathname === "/call") {
        const { method, args } = await request.json()
        const value = await env.storage[method](...args)
        return Response.json({ value: value === undefined ? null : value })
      }
    } catch (error) {
      return Response.json({ error: { message: String(error?.message ?? error), code: error?.code ?? null } })
    }
    return new Response("no route", { status: 404 })
  }
}`

describe("env.storage: the R2 subset on the node's object store (real workerd, store on disk)", () => {
  const storeDir = Path.join(folder, "objects")
  const suite = useRuntimeSuite({ timeoutMs: 20_000 }, {}, { providers: [ObjectStoreDisk.layer(storeDir)] })
  const admin = () => ({ token: suite.admin.token })

  const granted = async () => {
    const project = await suite.newProject()
    const bundle = [manifestEntry({ name: "app" }), { name: "worker/index.js", content: storageWorker }]
    expect((await suite.deploy(project.slug, project.name, bundle)).status).toBe(201)
    expect((await envOf(suite.edgeUrl, project.hostname)).keys).not.toContain("storage")
    const base = `/v1/orgs/${project.slug}/projects/${project.name}/storage`
    const grant = await suite.api.post(base, undefined, admin())
    expect(grant.status).toBe(200)
    expect(
      await eventually(async () => (await envOf(suite.edgeUrl, project.hostname)).keys.includes("storage"), 5_000)
    ).toBe(true)
    return { ...project, base, prefix: grant.body.prefix as string }
  }
  const put = async (hostname: string, key: string, body: string | Buffer, kind = "string") =>
    (
      await edgeCall(suite.edgeUrl, hostname, `/put?key=${encodeURIComponent(key)}&kind=${kind}`, {
        method: "POST",
        body
      })
    ).json()
  const get = async (hostname: string, key: string, as = "text") =>
    (await edgeCall(suite.edgeUrl, hostname, `/get?key=${encodeURIComponent(key)}&as=${as}`)).json()
  const call = (hostname: string, method: string, args: ReadonlyArray<unknown>) =>
    callBinding(suite.edgeUrl, hostname, "storage", method, args)

  it("put takes every kind of value and answers { key, size, etag, uploaded }; get, head, delete and list agree", async () => {
    const { hostname } = await granted()
    for (const kind of ["string", "buffer", "typed", "blob", "stream"]) {
      const stored = await put(hostname, `kinds/${kind}`, `value as ${kind}`, kind)
      expect(stored.value).toMatchObject({ key: `kinds/${kind}`, size: `value as ${kind}`.length })
      expect(stored.value.etag).toMatch(/^\S+$/)
      expect(Math.abs(Date.parse(stored.value.uploaded) - Date.now())).toBeLessThan(60_000)
      const read = await get(hostname, `kinds/${kind}`)
      expect(read.value).toEqual({ ...stored.value, body: `value as ${kind}` })
      expect((await call(hostname, "head", [`kinds/${kind}`])).value).toEqual(stored.value)
    }
    await put(hostname, "doc.json", JSON.stringify({ a: [1, 2] }))
    expect((await get(hostname, "doc.json", "json")).value.body).toEqual({ a: [1, 2] })
    expect(await get(hostname, "missing")).toEqual({ value: null })
    expect(await call(hostname, "head", ["missing"])).toEqual({ value: null })
    const again = await put(hostname, "kinds/string", "replaced")
    expect(again.value.size).toBe(8)
    expect((await get(hostname, "kinds/string")).value.body).toBe("replaced")
    expect(await call(hostname, "delete", ["kinds/string"])).toEqual({ value: null })
    expect(await call(hostname, "delete", [["kinds/buffer", "kinds/typed", "never-there"]])).toEqual({ value: null })
    expect(await get(hostname, "kinds/typed")).toEqual({ value: null })
    const listed = await call(hostname, "list", [])
    expect(listed.value.objects.map((object: { key: string }) => object.key)).toEqual([
      "doc.json",
      "kinds/blob",
      "kinds/stream"
    ])
    expect(listed.value.truncated).toBe(false)
    expect(listed.value).not.toHaveProperty("cursor")
  })

  it("keys are opaque: any string of 1..1024 bytes is kept as given, listed in UTF-8 byte order, paged by cursor", async () => {
    const { hostname } = await granted()
    const keys = ["../escape", "/leading", "a//b", ".", "..", "trailing/", "100% ~", "日本/語", "é", "z", "Z", "a\\b"]
    for (const key of keys) expect((await put(hostname, key, `v:${key}`)).value?.key).toBe(key)
    for (const key of keys) expect((await get(hostname, key)).value?.body, key).toBe(`v:${key}`)
    const sorted = [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
    const all = await call(hostname, "list", [{}])
    expect(all.value.objects.map((object: { key: string }) => object.key)).toEqual(sorted)
    const seen: Array<string> = []
    let cursor: string | undefined
    for (let page = 0; page < 10; page++) {
      const answer = (await call(hostname, "list", [{ limit: 5, ...(cursor === undefined ? {} : { cursor }) }])).value
      seen.push(...answer.objects.map((object: { key: string }) => object.key))
      if (!answer.truncated) {
        expect(answer).not.toHaveProperty("cursor")
        break
      }
      expect(answer.objects).toHaveLength(5)
      cursor = answer.cursor
    }
    expect(seen).toEqual(sorted)
    const underA = await call(hostname, "list", [{ prefix: "a/" }])
    expect(underA.value.objects.map((object: { key: string }) => object.key)).toEqual(["a//b"])
    const dotted = await call(hostname, "list", [{ prefix: "." }])
    expect(dotted.value.objects.map((object: { key: string }) => object.key)).toEqual([".", "..", "../escape"])
    const longest = "k".repeat(900)
    expect((await put(hostname, longest, "long")).value.size).toBe(4)
    expect((await get(hostname, longest)).value.body).toBe("long")
  })

  it("a key of up to 1024 bytes is kept even when its stored form would pass the store's limit; usage counts only values", async () => {
    const project = await granted()
    const { hostname } = project
    // Plain letters, punctuation (escaped to 3 bytes each in the store) and 3-byte characters, each 1024 bytes.
    const longest = ["k".repeat(1024), "/".repeat(1024), `long/${"?".repeat(1019)}`, `long/${"語".repeat(339)}ab`]
    for (const key of longest) expect(Buffer.byteLength(key)).toBe(1024)
    for (const key of longest) expect((await put(hostname, key, `v:${key.slice(0, 8)}`)).value?.key).toBe(key)
    for (const key of longest) {
      expect((await get(hostname, key)).value?.body, key.slice(0, 8)).toBe(`v:${key.slice(0, 8)}`)
      expect((await call(hostname, "head", [key])).value?.key).toBe(key)
    }
    await put(hostname, "long/short", "s")
    const sorted = (keys: Array<string>) => [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
    const keysOf = (answer: { value?: { objects: Array<{ key: string }> } }) =>
      answer.value?.objects.map((object) => object.key)
    expect(keysOf(await call(hostname, "list", []))).toEqual(sorted([...longest, "long/short"]))
    expect(keysOf(await call(hostname, "list", [{ prefix: "long/" }]))).toEqual(
      sorted([longest[2]!, longest[3]!, "long/short"])
    )
    expect(keysOf(await call(hostname, "list", [{ prefix: "/".repeat(1000) }]))).toEqual([longest[1]])
    // Paged by cursor across both kinds of key.
    const first = (await call(hostname, "list", [{ limit: 2 }])).value
    const rest = (await call(hostname, "list", [{ cursor: first.cursor }])).value
    expect([...first.objects, ...rest.objects].map((object: { key: string }) => object.key)).toEqual(
      sorted([...longest, "long/short"])
    )
    // Replaced, then deleted: nothing of it is listed afterwards.
    expect((await put(hostname, longest[0]!, "again")).value.size).toBe(5)
    expect((await get(hostname, longest[0]!)).value.body).toBe("again")
    expect(await call(hostname, "delete", [[longest[0], longest[1]]])).toEqual({ value: null })
    expect((await get(hostname, longest[0]!)).value).toBeNull()
    expect(keysOf(await call(hostname, "list", []))).toEqual(sorted([longest[2]!, longest[3]!, "long/short"]))
    // The usage reported is the values' bytes, not the node's own bookkeeping.
    const values = [longest[2]!, longest[3]!].map((key) => Buffer.byteLength(`v:${key.slice(0, 8)}`))
    const expected = values[0]! + values[1]! + 1
    const reported = await eventually(
      async () => (await suite.api.get(project.base, admin())).body.usedBytes === expected,
      60_000,
      500
    )
    expect(reported).toBe(true)
  }, 90_000)

  it("a key never reaches another project's prefix", async () => {
    const one = await granted()
    const two = await granted()
    await put(two.hostname, "private", "two's")
    const escape = `../${two.prefix}private`
    await put(one.hostname, escape, "one's")
    expect((await get(two.hostname, "private")).value.body).toBe("two's")
    expect((await get(one.hostname, escape)).value.body).toBe("one's")
    expect((await get(one.hostname, "private")).value).toBeNull()
    const twoList = await call(two.hostname, "list", [{}])
    expect(twoList.value.objects.map((object: { key: string }) => object.key)).toEqual(["private"])
  })

  it("bad input rejects inside the worker with a message, and the node keeps answering", async () => {
    const { hostname } = await granted()
    expect((await call(hostname, "head", [42])).error?.message).toMatch(/^invalid_key/)
    expect((await call(hostname, "head", [""])).error?.message).toMatch(/^invalid_key/)
    expect((await call(hostname, "head", ["x".repeat(1025)])).error?.message).toMatch(/^invalid_key/)
    expect((await call(hostname, "list", [{ limit: 0 }])).error?.message).toMatch(/^bad_request/)
    expect((await call(hostname, "list", [{ limit: 1001 }])).error?.message).toMatch(/^bad_request/)
    expect((await call(hostname, "list", [{ cursor: "not-a-cursor!" }])).error?.message).toMatch(/^bad_request/)
    expect((await call(hostname, "list", [{ prefix: 7 }])).error?.message).toMatch(/^bad_request/)
    expect((await call(hostname, "delete", [Array.from({ length: 1001 }, (_, i) => `k${i}`)])).error?.message).toMatch(
      /^bad_request/
    )
    expect((await put(hostname, "obj", "x", "object")).error?.message).toMatch(/^bad_request/)
    expect((await call(hostname, "list", [])).value.objects).toEqual([])
  })

  it("a put past the quota rejects with quota_exceeded and stores nothing; usage is reported to the control plane", async () => {
    const project = await granted()
    // The project already holds its quota less 100 bytes: a sparse file put in place of a small object.
    const filler = Path.join(storeDir, "objects", ...project.prefix.split("/").filter(Boolean), "filler~")
    Fs.mkdirSync(Path.dirname(filler), { recursive: true })
    Fs.writeFileSync(filler, "")
    Fs.truncateSync(filler, quota - 100)
    const refused = await put(project.hostname, "big", "x".repeat(101))
    expect(refused.error?.message).toMatch(/^quota_exceeded/)
    expect((await call(project.hostname, "head", ["big"])).value).toBeNull()
    // A stream of unknown length is counted as it comes: refused too, nothing kept.
    const streamed = await put(project.hostname, "big", Buffer.alloc(4096, 1), "stream")
    expect(streamed.error?.message).toMatch(/^quota_exceeded/)
    expect((await call(project.hostname, "head", ["big"])).value).toBeNull()
    expect((await put(project.hostname, "small", "x".repeat(60))).value.size).toBe(60)
    // Replacing an object counts only the difference.
    expect((await put(project.hostname, "small", "y".repeat(100))).value.size).toBe(100)
    expect((await put(project.hostname, "other", "z")).error?.message).toMatch(/^quota_exceeded/)
    expect((await get(project.hostname, "small")).value.body).toBe("y".repeat(100))
    expect(await call(project.hostname, "delete", ["small"])).toEqual({ value: null })
    expect((await put(project.hostname, "other", "z")).value.size).toBe(1)
    const reported = await eventually(
      async () => (await suite.api.get(project.base, admin())).body.usedBytes === quota - 100 + 1,
      60_000,
      500
    )
    expect(reported).toBe(true)
  })

  it("a value larger than one RPC message streams through whole", async () => {
    const { hostname } = await granted()
    const big = Buffer.alloc(40 * 1024 * 1024, 7)
    const stored = await put(hostname, "big.bin", big, "stream")
    expect(stored.value.size).toBe(big.length)
    expect((await get(hostname, "big.bin", "bytes")).value.body).toBe(big.length)
  })

  it("a call from a worker loaded before the revoke is refused not_granted once the node has converged", async () => {
    const project = await granted()
    expect((await call(project.hostname, "head", ["k"])).value).toBeNull()
    const pending = edgeCall(suite.edgeUrl, project.hostname, "/until-refused")
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((await suite.api.delete(project.base, undefined, admin())).status).toBe(204)
    const reply = await pending
    expect(reply.json()).toEqual({
      error: { message: "not_granted: storage is not granted to this project", code: "not_granted" }
    })
  })

  it("a revoke takes env.storage away at the next convergence; the objects stay for a later grant", async () => {
    const project = await granted()
    await put(project.hostname, "kept", "still here")
    expect((await suite.api.delete(project.base, undefined, admin())).status).toBe(204)
    expect(
      await eventually(async () => !(await envOf(suite.edgeUrl, project.hostname)).keys.includes("storage"), 5_000)
    ).toBe(true)
    expect((await suite.api.post(project.base, undefined, admin())).status).toBe(200)
    expect(
      await eventually(async () => (await envOf(suite.edgeUrl, project.hostname)).keys.includes("storage"), 5_000)
    ).toBe(true)
    expect((await get(project.hostname, "kept")).value.body).toBe("still here")
  })
})

describe("env.storage keys in the store", () => {
  it("the stored form of a prefix is a prefix of the key's, holds no `/` of the key's, and decodes back", () => {
    const keys = ["a/b", "../x", "日本語/ü", "%41", "k".repeat(1024), `${"é".repeat(300)}/x`, "."]
    for (const key of keys) {
      const stored = storedFormOf(key)
      expect(keyOfStoredForm(stored)).toBe(key)
      for (let cut = 1; cut < key.length; cut++) expect(stored.startsWith(storedFormOf(key.slice(0, cut)))).toBe(true)
      for (const segment of stored.split("/")) {
        expect(Buffer.byteLength(segment)).toBeLessThanOrEqual(200)
        expect(segment === "" || segment === "." || segment === "..").toBe(false)
      }
    }
  })
})
