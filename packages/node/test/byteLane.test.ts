import { manifestEntry } from "@hostplane/testkit"
import { describe, expect, it, vi } from "vitest"
import { byteLaneCounts } from "../src/edge/ByteLane.ts"
import { ChunkedEnd, scanRequestHead, scanResponseHead } from "../src/edge/HttpHead.ts"
import { connectRaw as connect, rawGet as get } from "./support/RawHttp.ts"
import { edgeCall, eventually, useRuntimeSuite } from "./support/RuntimeServer.ts"

const head = (text: string) => scanRequestHead(Buffer.from(text, "latin1"))

describe("the byte lane's request head scanner takes only strict, bodiless HTTP/1.1 heads", () => {
  it("a plain GET or HEAD head is taken, with its headers once each, names lowercased", () => {
    const scanned = head(
      "GET /a/b?c=d HTTP/1.1\r\nHost: app.example.com:8080\r\nAccept:  */* \r\nX-Y: 1\r\n\r\nGET /next"
    )
    expect(scanned).toMatchObject({
      method: "GET",
      target: "/a/b?c=d",
      path: "/a/b",
      headers: { host: "app.example.com:8080", accept: "*/*", "x-y": "1" },
      length: "GET /a/b?c=d HTTP/1.1\r\nHost: app.example.com:8080\r\nAccept:  */* \r\nX-Y: 1\r\n\r\n".length
    })
    expect(head("HEAD / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n")?.method).toBe(
      "HEAD"
    )
    expect(head("GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n")?.headers.host).toBe("[::1]:80")
    // Header names that are also names of an object's own machinery are headers like any other, each once.
    const odd = head("GET / HTTP/1.1\r\nHost: h\r\nConstructor: c\r\n__proto__: p\r\ntoString: t\r\n\r\n")
    expect(odd === null || odd === undefined ? odd : { ...odd.headers }).toEqual({
      host: "h",
      constructor: "c",
      ["__proto__"]: "p",
      tostring: "t"
    })
    expect(Object.keys(odd!.headers)).toEqual(["host", "constructor", "__proto__", "tostring"])
    expect(head("GET / HTTP/1.1\r\nHost: h\r\n__proto__: p\r\n__Proto__: q\r\n\r\n")).toBeNull()
    expect(head("GET / HTTP/1.1\r\nHost: h\r\nhasOwnProperty: x\r\nvalueOf: y\r\n\r\n")?.headers).toMatchObject({
      hasownproperty: "x",
      valueof: "y"
    })
  })

  it("an incomplete head waits, unless its bytes already rule it out", () => {
    expect(head("GET / HTTP/1.1\r\nHost: h\r\n")).toBeUndefined()
    expect(head("GET / HTTP/1.1\nHost")).toBeNull()
    expect(head("GET / HTTP/1.1\r\nHo\0")).toBeNull()
    expect(head(`GET / HTTP/1.1\r\nX: ${"a".repeat(9000)}`)).toBeNull()
  })

  it.each([
    ["a body by length", "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"],
    ["CL and TE", "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"],
    ["TE alone", "GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"],
    ["two CL", "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n"],
    ["Expect", "GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n"],
    ["Upgrade", "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"],
    ["Connection: close", "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"],
    ["obs-fold", "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n"],
    ["a bare LF", "GET / HTTP/1.1\r\nHost: h\nX: a\r\n\r\n"],
    ["a bare CR", "GET / HTTP/1.1\r\nHost: h\rX: a\r\n\r\n"],
    ["a NUL", "GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n"],
    ["a byte above 0x7e", "GET / HTTP/1.1\r\nHost: h\r\nX: caf\u00e9\r\n\r\n"],
    ["a space before the colon", "GET / HTTP/1.1\r\nHost : h\r\n\r\n"],
    ["a second Host", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"],
    ["a header sent twice", "GET / HTTP/1.1\r\nHost: a\r\nCookie: a=1\r\ncookie: b=2\r\n\r\n"],
    ["no Host", "GET / HTTP/1.1\r\nX: a\r\n\r\n"],
    ["a Host that is no host", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n"],
    ["HTTP/1.0", "GET / HTTP/1.0\r\nHost: h\r\n\r\n"],
    ["POST", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"],
    ["a lowercase method", "get / HTTP/1.1\r\nHost: h\r\n\r\n"],
    ["absolute-form", "GET http://h/ HTTP/1.1\r\nHost: h\r\n\r\n"],
    ["a target with a space", "GET /a b HTTP/1.1\r\nHost: h\r\n\r\n"],
    ["a target with a fragment", "GET /a#b HTTP/1.1\r\nHost: h\r\n\r\n"],
    ["a CRLF before the request line", "\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"],
    ["a head above the bound", `GET / HTTP/1.1\r\nHost: h\r\nX: ${"a".repeat(9000)}\r\n\r\n`]
  ])("%s is not the lane's", (_name, text) => {
    expect(head(text)).toBeNull()
  })
})

describe("the byte lane's response scanner", () => {
  it("reads the framing: length, chunked, none for HEAD, 204 and 304, until close otherwise", () => {
    const of = (text: string, method = "GET") => scanResponseHead(Buffer.from(text, "latin1"), method)
    expect(of("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")?.framing).toEqual({ _tag: "Length", length: 5 })
    expect(of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")?.framing).toEqual({ _tag: "Chunked" })
    expect(of("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "HEAD")?.framing).toEqual({ _tag: "None" })
    expect(of("HTTP/1.1 304 Not Modified\r\n\r\n")?.framing).toEqual({ _tag: "None" })
    expect(of("HTTP/1.1 200 OK\r\n\r\n")?.framing).toEqual({ _tag: "Close" })
    expect(of("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n")).toBeNull()
    expect(of("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n")).toBeNull()
    expect(of("HTTP/1.1 100 Continue\r\n\r\n")).toBeNull()
    expect(of("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n")).toBeUndefined()
  })

  it("finds a chunked body's end across pieces, trailers included, and refuses what is not chunked coding", () => {
    const body = Buffer.from("5;x=y\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\nNEXT")
    for (let cut = 1; cut < body.length - 4; cut++) {
      const end = new ChunkedEnd()
      const first = end.feed(body.subarray(0, cut))
      const at = first >= 0 ? first : cut + end.feed(body.subarray(cut))
      expect(at).toBe(body.length - 4)
    }
    expect(new ChunkedEnd().feed(Buffer.from("zz\r\n"))).toBe(-2)
    expect(new ChunkedEnd().feed(Buffer.from("3\r\nabcX"))).toBe(-2)
    expect(new ChunkedEnd().feed(Buffer.from("3\nabc"))).toBe(-2)
  })
})

/** Echoes what it received; waits, hangs, throws and streams by path. */
const worker = (version: string) => `export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url)
    if (url.pathname === "/wait") { await new Promise((resolve) => setTimeout(resolve, 60000)); return new Response("late") }
    if (url.pathname === "/throw") { console.warn("about to throw"); throw new RangeError("out of range") }
    if (url.pathname === "/stream") {
      let sent = 0
      const body = new ReadableStream({
        async pull(controller) {
          await new Promise((resolve) => setTimeout(resolve, 200))
          if (sent++ === 20) return controller.close()
          controller.enqueue(new TextEncoder().encode("chunk " + sent + "\\n"))
        }
      })
      return new Response(body, { headers: { "content-type": "text/plain" } })
    }
    console.log("served", url.pathname)
    return Response.json({
      version: ${JSON.stringify(version)},
      method: request.method,
      url: request.url,
      body: request.method === "POST" ? await request.text() : null,
      headers: Object.fromEntries(request.headers),
      cf: request.cf === undefined ? "none" : request.cf
    })
  }
}`

const bundle = (version: string) => [
  manifestEntry({ name: "app" }),
  { name: "worker/index.js", content: worker(version) },
  { name: "assets/hello.txt", content: "hello asset" }
]

describe("the byte lane: bodiless worker requests on plain HTTP forwarded as bytes, everything else node's", () => {
  const timeoutMs = 3_000
  const suite = useRuntimeSuite({ timeoutMs, shards: 1, hot: { max: 2, promoteRate: 5 } })
  vi.setConfig({ testTimeout: 120_000 })

  const promote = async (project: { readonly id: string; readonly hostname: string }) => {
    let running = true
    const load = Array.from({ length: 4 }, async () => {
      while (running) await edgeCall(suite.edgeUrl, project.hostname, "/").catch(() => undefined)
    })
    const promoted = await eventually(async () => suite.runtime.hot().projects.includes(project.id), 30_000)
    running = false
    await Promise.all(load)
    expect(promoted).toBe(true)
  }

  const deployed = async (version = "v1") => {
    const project = await suite.newProject()
    expect((await suite.deploy(project.slug, project.name, bundle(version))).status).toBe(201)
    return project
  }

  const eventsOf = async (project: { readonly slug: string; readonly name: string }, paths: ReadonlyArray<string>) => {
    const path = `/v1/orgs/${project.slug}/projects/${project.name}/logs?limit=100`
    return ((await suite.api.get(path, { token: suite.admin.token })).body.items ?? []).filter((event: any) =>
      paths.includes(new URL(event.request.url).pathname)
    )
  }

  it("pipelined GETs and HEADs of a hot worker are forwarded in order on one connection, rewritten as the edge rewrites them, one invocation event each", async () => {
    const project = await deployed()
    await promote(project)
    const before = { ...byteLaneCounts }
    const connection = await connect(suite.edgeUrl)
    const hostile = "X-Hostplane-Invoke: {}\r\nX-Forwarded-For: 10.9.9.9\r\nService-Access-Bypass: x\r\n"
    connection.write(
      get("/one?x=1", project.hostname, `${hostile}Cookie: a=1; __Host-service_access=secret; b=2\r\n`) +
        `HEAD /two HTTP/1.1\r\nHost: ${project.hostname}\r\n\r\n` +
        get("/three", project.hostname)
    )
    const one = await connection.read()
    const two = await connection.read("HEAD")
    const three = await connection.read()
    expect([one?.status, two?.status, three?.status]).toEqual([200, 200, 200])
    const first = JSON.parse(one!.body)
    expect(first).toMatchObject({ version: "v1", method: "GET", url: `http://${project.hostname}/one?x=1`, cf: "none" })
    expect(first.headers).toMatchObject({
      host: project.hostname,
      "x-forwarded-for": "127.0.0.1",
      cookie: "a=1; b=2"
    })
    expect(Object.keys(first.headers).filter((name) => name.startsWith("x-hostplane-"))).toEqual([])
    expect(first.headers["service-access-bypass"]).toBeUndefined()
    expect(one!.headers).toMatchObject({ connection: "keep-alive", "content-type": "application/json" })
    expect(one!.headers.date).toBeDefined()
    expect(two!.body).toBe("")
    expect(JSON.parse(three!.body).url).toBe(`http://${project.hostname}/three`)
    expect(byteLaneCounts.requests - before.requests).toBe(3)
    expect(byteLaneCounts.handedOver - before.handedOver).toBe(0)
    // And the connection goes on: a request written later is served on it too.
    connection.write(get("/four", project.hostname))
    expect((await connection.read())?.status).toBe(200)
    connection.close()
    expect(suite.runtime.hot().projects).toContain(project.id)
    const paths = ["/one", "/two", "/three", "/four"]
    expect(await eventually(async () => (await eventsOf(project, paths)).length === 4, 10_000)).toBe(true)
    for (const event of await eventsOf(project, paths)) {
      expect(event).toMatchObject({ outcome: "ok", response: { status: 200 } })
    }
    const logged = (await eventsOf(project, ["/one"]))[0]
    expect(logged.logs).toMatchObject([{ level: "log", message: ["served", "/one"] }])
    expect(logged.request).toEqual({ method: "GET", url: `http://${project.hostname}/one?x=1` })
  })

  it("a later request the lane does not take waits for the response in flight, then the connection is node's with the unread bytes: a file, a body, a host with no project", async () => {
    const project = await deployed()
    const other = await deployed("v2")
    const before = { ...byteLaneCounts }
    const connection = await connect(suite.edgeUrl)
    // Another project's worker (on the loader shard) is the lane's too; the file is not, and what follows it is node's.
    connection.write(
      get("/a", project.hostname) +
        get("/b", other.hostname) +
        get("/hello.txt", project.hostname) +
        get("/c", project.hostname) +
        `POST /d HTTP/1.1\r\nHost: ${project.hostname}\r\nContent-Length: 3\r\n\r\nabc` +
        get("/e", "nobody.invalid")
    )
    const replies = []
    for (let index = 0; index < 6; index++) replies.push(await connection.read())
    expect(replies.map((reply) => reply?.status)).toEqual([200, 200, 200, 200, 200, 404])
    expect(JSON.parse(replies[0]!.body)).toMatchObject({ version: "v1", url: `http://${project.hostname}/a` })
    expect(JSON.parse(replies[1]!.body)).toMatchObject({ version: "v2", url: `http://${other.hostname}/b` })
    expect(replies[2]!.body).toBe("hello asset")
    expect(JSON.parse(replies[3]!.body)).toMatchObject({ version: "v1", url: `http://${project.hostname}/c` })
    expect(JSON.parse(replies[4]!.body)).toMatchObject({ method: "POST", body: "abc" })
    expect(byteLaneCounts.requests - before.requests).toBe(2)
    expect(byteLaneCounts.handedOver - before.handedOver).toBe(1)
    connection.close()
  })

  it("a protected deployment: a request the bypass admits is the lane's (the worker never sees the header), one without a pass is node's to refuse", async () => {
    const project = await deployed()
    const access = `/v1/orgs/${project.slug}/projects/${project.name}/access`
    expect((await suite.api.put(access, { mode: "org" }, { token: suite.admin.token })).status).toBe(200)
    const bypass = await suite.api.post(`${access}/bypass`, undefined, { token: suite.admin.token })
    const secret = bypass.body.secret as string
    expect(
      await eventually(async () => (await edgeCall(suite.edgeUrl, project.hostname, "/")).status === 401, 10_000)
    ).toBe(true)
    const before = { ...byteLaneCounts }
    const connection = await connect(suite.edgeUrl)
    connection.write(
      get("/pass", project.hostname, `Service-Access-Bypass: ${secret}\r\n`) +
        get("/pass-again", project.hostname, `Service-Access-Bypass: ${secret}\r\n`) +
        get("/nopass", project.hostname)
    )
    const admitted = await connection.read()
    const again = await connection.read()
    const refused = await connection.read()
    connection.close()
    expect([admitted?.status, again?.status, refused?.status]).toEqual([200, 200, 401])
    expect(JSON.parse(admitted!.body).headers["service-access-bypass"]).toBeUndefined()
    expect(JSON.parse(again!.body).url).toBe(`http://${project.hostname}/pass-again`)
    expect(byteLaneCounts.requests - before.requests).toBe(2)
    expect(byteLaneCounts.handedOver - before.handedOver).toBe(1)
    expect(await eventsOf(project, ["/nopass"])).toEqual([])
  })

  // Each is followed by a request head on the same connection: where the hostile head declares a body, those bytes
  // are that body (or the connection is refused) and must never run as a request. One deployed project serves
  // every case: a smuggled request of any case would show among its events.
  let hostile: ReturnType<typeof deployed> | undefined
  it.each([
    [
      "CL and TE",
      (host: string) =>
        `GET / HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n` +
        get("/smuggled", host)
    ],
    [
      "TE and a smuggled head in the chunk",
      (host: string) =>
        `GET / HTTP/1.1\r\nHost: ${host}\r\nTransfer-Encoding: chunked\r\n\r\n${get("/smuggled", host).length.toString(16)}\r\n${get("/smuggled", host)}\r\n0\r\n\r\n`
    ],
    ["obs-fold", (host: string) => `GET / HTTP/1.1\r\nHost: ${host}\r\nX: a\r\n b\r\n\r\n` + get("/smuggled", host)],
    ["a bare LF", (host: string) => `GET / HTTP/1.1\nHost: ${host}\n\n` + get("/next", host)],
    ["a NUL", (host: string) => `GET / HTTP/1.1\r\nHost: ${host}\r\nX: a\0\r\n\r\n` + get("/smuggled", host)],
    [
      "a huge head",
      (host: string) => `GET / HTTP/1.1\r\nHost: ${host}\r\nX: ${"a".repeat(20_000)}\r\n\r\n` + get("/smuggled", host)
    ],
    [
      "a second Host",
      (host: string) => `GET / HTTP/1.1\r\nHost: ${host}\r\nHost: nobody.invalid\r\n\r\n` + get("/next", host)
    ],
    [
      "a body on a GET",
      (host: string) =>
        `GET /body HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${get("/smuggled", host).length}\r\n\r\n` +
        get("/smuggled", host)
    ]
  ])("hostile input is node's to judge, never forwarded by the lane (%s)", async (name, make) => {
    const project = await (hostile ??= deployed())
    // The lane's answer for the host is known: only the head's form keeps the request from the lane.
    expect((await edgeCall(suite.edgeUrl, project.hostname, "/")).status).toBe(200)
    const before = { ...byteLaneCounts }
    const connection = await connect(suite.edgeUrl)
    connection.write(make(project.hostname))
    const reply = await connection.read()
    await connection.closed(500)
    connection.close()
    expect(byteLaneCounts.requests - before.requests).toBe(0)
    expect(byteLaneCounts.handedOver - before.handedOver).toBe(1)
    // Node refused the head, or took the smuggled bytes as the body they are declared to be: never a request.
    if (reply !== undefined && reply.status === 200) expect(JSON.parse(reply.body).url).not.toContain("/smuggled")
    // A request sent once that connection is gone: its event is written after any the hostile bytes made there.
    const after = `/after-${name.replaceAll(" ", "-")}`
    expect((await edgeCall(suite.edgeUrl, project.hostname, after)).status).toBe(200)
    expect(await eventually(async () => (await eventsOf(project, [after])).length === 1, 10_000)).toBe(true)
    expect(await eventsOf(project, ["/smuggled"])).toEqual([])
  })

  it("a worker past its deadline is 504 worker_timeout and one that throws 500 worker_exception, on the same connection, each with its event", async () => {
    const project = await deployed()
    await promote(project)
    const connection = await connect(suite.edgeUrl)
    const started = Date.now()
    connection.write(get("/wait", project.hostname) + get("/throw", project.hostname) + get("/after", project.hostname))
    const late = await connection.read()
    expect(late?.status).toBe(504)
    expect(Date.now() - started).toBeGreaterThanOrEqual(timeoutMs - 100)
    expect(JSON.parse(late!.body)).toEqual({
      code: "worker_timeout",
      message: `the worker did not answer within ${timeoutMs} ms`
    })
    expect(late!.headers).toMatchObject({ "content-type": "application/json", "cache-control": "no-store" })
    const thrown = await connection.read()
    expect(thrown?.status).toBe(500)
    expect(JSON.parse(thrown!.body)).toEqual({ code: "worker_exception", message: "the worker threw an exception" })
    expect((await connection.read())?.status).toBe(200)
    connection.close()
    const paths = ["/wait", "/throw", "/after"]
    expect(await eventually(async () => (await eventsOf(project, paths)).length === 3, 10_000)).toBe(true)
    const events = await eventsOf(project, paths)
    const of = (path: string) => events.find((event: any) => new URL(event.request.url).pathname === path)
    expect(of("/wait")).toMatchObject({ outcome: "timeout", response: null })
    expect(of("/throw")).toMatchObject({
      outcome: "exception",
      logs: [{ level: "warn", message: ["about to throw"] }],
      exceptions: [{ name: "RangeError", message: "out of range" }]
    })
    expect(of("/after")).toMatchObject({ outcome: "ok", response: { status: 200 } })
  })

  it("a client that leaves in the middle of a streamed response cancels the worker's request: its event is canceled with the worker's status", async () => {
    const project = await deployed()
    await promote(project)
    const connection = await connect(suite.edgeUrl)
    connection.write(get("/stream", project.hostname))
    await new Promise<void>((resolve) => connection.socket.once("data", () => resolve()))
    connection.close()
    expect(await eventually(async () => (await eventsOf(project, ["/stream"])).length === 1, 10_000)).toBe(true)
    expect((await eventsOf(project, ["/stream"]))[0]).toMatchObject({ outcome: "canceled", response: { status: 200 } })
    // A streamed response read whole ends ok, its chunked body intact.
    const whole = await connect(suite.edgeUrl)
    whole.write(get("/stream?whole", project.hostname) + get("/after-stream", project.hostname))
    const streamed = await whole.read()
    expect(streamed?.headers["transfer-encoding"]).toBe("chunked")
    expect(streamed?.body.split("\n").filter(Boolean)).toHaveLength(20)
    expect((await whole.read())?.status).toBe(200)
    whole.close()
  })

  it("deploys and a rollback under load on kept-alive connections: no failed request, each served by the code live at the time", async () => {
    const project = await deployed("v1")
    await promote(project)
    const before = { ...byteLaneCounts }
    let running = true
    const failures: Array<string> = []
    let served = 0
    const load = Array.from({ length: 4 }, async () => {
      const connection = await connect(suite.edgeUrl)
      while (running) {
        connection.write(get("/", project.hostname))
        const reply = await connection.read()
        if (reply?.status === 200 && /"version":"v[123]"/.test(reply.body)) served += 1
        else failures.push(`${reply?.status} ${reply?.body.slice(0, 200)}`)
        if (reply === undefined) break
      }
      connection.close()
    })
    const projectPath = `/v1/orgs/${project.slug}/projects/${project.name}`
    for (const version of ["v2", "v3"]) {
      expect((await suite.deploy(project.slug, project.name, bundle(version))).status).toBe(201)
      expect(JSON.parse((await edgeCall(suite.edgeUrl, project.hostname, "/")).text).version).toBe(version)
    }
    const list = await suite.api.get(`${projectPath}/deployments`, { token: suite.admin.token })
    const first = list.body.items.find((item: any) => item.version === 1)
    const rollback = await suite.api.post(
      `${projectPath}/rollback`,
      { deploymentId: first.id },
      { token: suite.admin.token }
    )
    expect(rollback.status).toBe(200)
    expect(JSON.parse((await edgeCall(suite.edgeUrl, project.hostname, "/")).text).version).toBe("v1")
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    running = false
    await Promise.all(load)
    expect(failures).toEqual([])
    expect(served).toBeGreaterThan(20)
    // The kept-alive connections stayed in the lane across the deploys (the loader shard serves a new key at once).
    expect(byteLaneCounts.handedOver - before.handedOver).toBe(0)
    expect(byteLaneCounts.requests - before.requests).toBeGreaterThanOrEqual(served)
  })
})
