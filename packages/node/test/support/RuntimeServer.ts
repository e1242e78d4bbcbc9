import { NodeHttpServer } from "@effect/platform-node"
import { type ConfigOverrides, Tls } from "@hostplane/core"
import { bundleOf, type BundleEntry, layerMemory } from "@hostplane/testkit"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { createHash } from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll } from "vitest"
import {
  defaultRuntimeSettings,
  EdgeLive,
  edgeApp,
  installLane,
  makeEdgeLane,
  type RuntimeSettings,
  WorkerInvoker,
  WorkerCheckLive,
  WorkerInvokerLive,
  WorkerRuntime
} from "../../src/index.ts"
import {
  client,
  type Client,
  type Session,
  startTestServer,
  type TestServer,
  type TestServerOptions,
  unique
} from "../../../http/test/support/TestServer.ts"

export interface RuntimeSuite {
  readonly server: TestServer
  /** The edge with the worker runtime behind it. */
  readonly edgeUrl: string
  readonly runtime: WorkerRuntime["Service"]
  readonly api: Client
  readonly admin: Session
  /** A fresh org and project (admin), answering the project's name and default hostname. */
  readonly newProject: () => Promise<{
    readonly slug: string
    readonly name: string
    readonly hostname: string
    readonly id: string
  }>
  /** Uploads a bundle; answers the deploy's status and body. */
  readonly deploy: (
    slug: string,
    project: string,
    entries: ReadonlyArray<BundleEntry>
  ) => Promise<{ status: number; body: any; digest: string }>
}

/**
 * One hostplane server (memory stores) with the real workerd runtime, its deploy check, and an edge listener whose
 * worker requests go to the runtime, for the enclosing `describe`.
 */
export const useRuntimeSuite = (
  settings: Partial<RuntimeSettings> = {},
  overrides: ConfigOverrides = {},
  options: TestServerOptions = {}
): RuntimeSuite => {
  const suite = {} as { -readonly [K in keyof RuntimeSuite]: RuntimeSuite[K] }
  const api = client(() => suite.server.url)
  suite.api = api
  const scope = Effect.runSync(Scope.make())
  let edge: Http.Server | undefined
  const runtimeSettings = { ...defaultRuntimeSettings, shards: 2, ...settings }
  // Off, as the server does it: no runtime, no deploy check, no invoker behind the edge.
  const extra = runtimeSettings.enabled
    ? Layer.provideMerge(WorkerCheckLive, WorkerRuntime.layer(runtimeSettings))
    : Layer.empty
  suite.newProject = async () => {
    const slug = unique("org")
    const org = await api.post("/v1/orgs", { name: "Org", slug }, { token: suite.admin.token })
    if (org.status !== 201) throw new Error(`org create failed: ${org.status}`)
    const reply = await api.post(`/v1/orgs/${slug}/projects`, { name: unique("app") }, { token: suite.admin.token })
    if (reply.status !== 201) throw new Error(`project create failed: ${reply.status}`)
    return { slug, name: reply.body.name, hostname: reply.body.hostname, id: reply.body.id }
  }
  suite.deploy = async (slug, project, entries) => {
    const bytes = await Effect.runPromise(bundleOf(entries))
    const reply = await fetch(`${suite.server.url}/v1/orgs/${slug}/projects/${project}/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${suite.admin.token}`, "content-type": "application/gzip" },
      body: bytes
    })
    const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`
    return { status: reply.status, body: await reply.json(), digest }
  }
  beforeAll(async () => {
    suite.server = await startTestServer(
      Layer.fresh(layerMemory),
      overrides,
      extra as Layer.Layer<never, unknown, never>,
      undefined,
      options
    )
    const context = await suite.server.run(Effect.context<never>())
    const invoker = await Effect.runPromise(
      Layer.buildWithScope(
        Layer.merge(runtimeSettings.enabled ? WorkerInvokerLive : WorkerInvoker.off, Tls.EdgeTls.off).pipe(
          Layer.provideMerge(EdgeLive)
        ),
        scope
      ).pipe(Effect.provideContext(context as Context.Context<any>))
    )
    const merged = Context.merge(context as Context.Context<any>, invoker)
    if (runtimeSettings.enabled) suite.runtime = Context.get(merged, WorkerRuntime)
    const handler = await Effect.runPromise(
      NodeHttpServer.makeHandler(edgeApp, { scope }).pipe(Effect.provideContext(merged))
    )
    // The edge as the server runs it: worker requests through the lane, everything else through the app.
    const lane = await Effect.runPromise(makeEdgeLane("http", () => Effect.void).pipe(Effect.provideContext(merged)))
    const listening = installLane(Http.createServer(handler), lane)
    // The server's keep-alive (decisions.md part 15's 65 s), not node's 5 s: the client shares this event loop, so on a
    // loaded machine its next request on an idle connection could meet the edge closing it at 5 s (read ECONNRESET).
    listening.keepAliveTimeout = 65_000
    listening.headersTimeout = 66_000
    edge = listening
    await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve))
    suite.edgeUrl = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`
    suite.admin = await api.login(unique("admin"))
  })
  afterAll(async () => {
    edge?.closeAllConnections()
    await new Promise((resolve) => (edge === undefined ? resolve(undefined) : edge.close(resolve)))
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await suite.server?.close()
  })
  return suite
}

export interface EdgeReply {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: Buffer
  readonly text: string
  readonly json: () => any
}

/** A raw request to the edge with a chosen Host header. */
export const edgeCall = (
  base: string,
  host: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {}
) =>
  new Promise<EdgeReply>((resolve, reject) => {
    const url = new URL(base)
    const request = Http.request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: options.method ?? "GET",
        // Node's client may send the head of a GET before `end(body)` counts the body, so without its own length the
        // body would read as the next request on the connection.
        headers: {
          host,
          ...(options.body === undefined ? {} : { "content-length": String(Buffer.byteLength(options.body)) }),
          ...options.headers
        }
      },
      (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () => {
          const body = Buffer.concat(chunks)
          resolve({
            status: response.statusCode!,
            headers: response.headers,
            body,
            text: body.toString("utf8"),
            json: () => JSON.parse(body.toString("utf8"))
          })
        })
      }
    )
    request.on("error", reject)
    request.end(options.body)
  })

/** Polls `check` until it holds or `ms` pass; answers whether it held. */
export const eventually = async (check: () => Promise<boolean>, ms: number, every = 100) => {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return true
    await new Promise((resolve) => setTimeout(resolve, every))
  }
  return false
}

/**
 * A tenant worker's `/later` route, for the source of a test worker whose `fetch` takes `(request, env, ctx)` and has
 * `url`: it answers "soon" and leaves work to `ctx.waitUntil` that prints "after the response" 50 ms later and then
 * rejects with a TypeError "late failure", both of which belong to the invocation's event.
 */
export const laterRoute = `if (url.pathname === "/later") {
      ctx.waitUntil((async () => {
        await scheduler.wait(50)
        console.log("after the response")
        throw new TypeError("late failure")
      })())
      return new Response("soon")
    }`
