import { NodeHttpServerRequest } from "@effect/platform-node"
import { type Deployments, Errors, Kernel, Logs, Node } from "@hostplane/core"
import * as Edge from "../edge/Edge.ts"
import {
  cookieOf,
  type SpliceCall,
  type SpliceInvocation,
  type SpliceRequest,
  WorkerInvoker,
  type WorkerSplice
} from "../edge/WorkerInvoker.ts"
import { authFlowCookie, authSessionCookie } from "../enduser/AuthWorker.ts"
import { Context, Effect, Layer, type Scope, Semaphore } from "effect"
import { Cookies, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { createRequire } from "node:module"
import * as Http from "node:http"
import type { TLSSocket } from "node:tls"
import type { Dispatcher, Pool } from "undici"
import { askedBy, makeBindings } from "../bindings/Bindings.ts"
import { makeEventBatches, tickMs } from "./EventBatches.ts"
import type { Invocation } from "./LogCollector.ts"
import { WorkerRuntime } from "./WorkerRuntime.ts"

/**
 * undici's pool alone (the package's index also loads its fetch, WebSocket, cache and mock modules), required at the
 * first shard's pool: a node that serves no worker never loads it.
 */
const loadUndiciPool = (): typeof Pool =>
  (undiciPool ??= createRequire(import.meta.url)("undici/lib/dispatcher/pool.js") as typeof Pool)
let undiciPool: typeof Pool | undefined

/** decisions.md part 13: request bodies up to 100 MiB reach a worker; larger ones are 413. */
export const maxRequestBodyBytes = 100 * 1024 * 1024

/** How long a stopping node tries to write the invocation events it still holds. */
const shutdownWriteMs = 5_000

/**
 * How often the node reads the control plane's changes (secrets, grants) when nothing asked for them sooner, while it
 * does not hear the node revision's raises (a remote node, or the feed lost).
 */
const convergeEveryMs = 1_000

/** How often it reads them all the same while it hears every raise: the feed's connection could die unnoticed. */
const convergeHeardEveryMs = 5_000

/** The service's own cookies, which never reach a worker. */
const ownCookies = new Set([Edge.accessCookie, authSessionCookie, authFlowCookie])

/** Headers a client sends that a worker never sees, or that the edge sets itself. */
const droppedHeaders = new Set([
  "service-access-bypass",
  "x-forwarded-for",
  "x-forwarded-proto",
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer"
])

/** Response headers that belong to one hop. */
const hopHeaders = new Set(["connection", "keep-alive", "transfer-encoding", "set-cookie"])

/** Headers of one connection, which an HTTP/2 response must not carry (and an HTTP/1.1 one sets itself). */
const connectionHeaders = new Set(["connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"])

const envelopeHeaders = {
  "content-type": "application/json",
  "x-content-type-options": "nosniff",
  "cache-control": "no-store"
}

/** An error envelope as the byte lane writes it: the same headers and body as `serveNode`'s. */
const envelopeOf = (refused: { readonly status: number; readonly code: string; readonly message: string }) => ({
  status: refused.status,
  headers: envelopeHeaders,
  body: JSON.stringify({ code: refused.code, message: refused.message })
})

const envelope = (status: number, code: string, message: string) =>
  HttpServerResponse.jsonUnsafe(
    { code, message },
    { status, headers: { "x-content-type-options": "nosniff", "cache-control": "no-store" } }
  )

const tooLarge = {
  status: 413,
  code: "payload_too_large",
  message: `request bodies are limited to ${maxRequestBodyBytes} bytes`
}

/** The host the client asked for, port included: `Host` over HTTP/1.1, `:authority` over HTTP/2. */
const authorityOf = (incoming: Http.IncomingMessage): string | undefined => authorityIn(incoming.headers)

const authorityIn = (headers: Http.IncomingHttpHeaders): string | undefined => {
  const authority = headers.host ?? headers[":authority"]
  return typeof authority === "string" && authority !== "" ? authority : undefined
}

/** The cookie header without the service's own cookies; undefined when nothing is left. */
const withoutOwnCookies = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const kept = header
    .split(";")
    .map((part) => part.trim())
    .filter((part) => part !== "" && !ownCookies.has(part.slice(0, Math.max(0, part.indexOf("="))).trim()))
  return kept.length === 0 ? undefined : kept.join("; ")
}

interface ProjectEnv {
  readonly secrets: Readonly<Record<string, string>>
  readonly bindings: Readonly<Record<string, unknown>>
}

/** Where the invoker's invocation events go: `recordAll` answers how many were kept. */
export class InvocationEvents extends Context.Service<
  InvocationEvents,
  { readonly recordAll: (events: ReadonlyArray<Logs.LogEventInput>) => Effect.Effect<number> }
>()("@hostplane/node/runtime/InvocationEvents") {
  /** The control plane's logs area in this process. */
  static readonly layer = Layer.effect(
    InvocationEvents,
    Effect.map(Effect.service(Logs.RuntimeLogs), (logs) => InvocationEvents.of({ recordAll: logs.recordAll }))
  )
}

/**
 * What wakes the invoker's converge when the node revision is raised: the control plane's feed in its own process;
 * none on a node elsewhere, which reads the node state every `convergeEveryMs`.
 */
export class ConvergeWakeups extends Context.Service<
  ConvergeWakeups,
  { readonly watch: Effect.Effect<Kernel.RevisionFeed, Kernel.RevisionFeedLost, Scope.Scope> | undefined }
>()("@hostplane/node/runtime/ConvergeWakeups") {
  /** The control plane's node revisions in this process. */
  static readonly layer = Layer.effect(
    ConvergeWakeups,
    Effect.map(Effect.service(Kernel.NodeRevisions), (revisions) => ConvergeWakeups.of({ watch: revisions.watch }))
  )
  static readonly none = Layer.succeed(ConvergeWakeups)(ConvergeWakeups.of({ watch: undefined }))
}

/**
 * The edge's side of the worker runtime: converges on the node state (secrets and grants of each project, read when
 * the node revision's raise is heard, else at most `convergeEveryMs` old, read at once for a project not seen yet),
 * registers what each request's worker loads, and forwards the request over the shard's socket, streaming both ways,
 * under the time and size limits.
 */
export const WorkerInvokerOn = Layer.effect(
  WorkerInvoker,
  Effect.gen(function* () {
    const runtime = yield* WorkerRuntime
    const nodes = yield* Node.Nodes
    const collector = runtime.collector
    const settings = runtime.settings
    // Every invocation's event goes to the runtime logs of decisions.md part 13; recording never fails a request, and
    // runs beside it.
    const logs = yield* InvocationEvents
    // Events are written in batches (`EventBatches`), so a busy worker costs the control database one write per
    // batch, not one per request.
    const batches = makeEventBatches(logs.recordAll, yield* Effect.context<never>())
    const timer = setInterval(batches.tick, tickMs)
    timer.unref()
    // A stopping node writes what it holds: the invocations still waiting for their reports, and the batches not yet
    // written. Bounded, so a control database that no longer answers does not hold the shutdown.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        clearInterval(timer)
        collector.drain()
        yield* batches.drain
      }).pipe(
        Effect.timeout(shutdownWriteMs),
        Effect.catchCause((cause) => Effect.logWarning("runtime log events lost at shutdown", cause))
      )
    )
    collector.setSink(batches.add)

    const states = new Map<string, Node.NodeProject>()
    /** Each project's env, with the state it was made from (a converge puts a new state object in `states`). */
    const envs = new Map<
      string,
      {
        readonly signature: string
        readonly env: ProjectEnv
        readonly project: Node.NodeProject
        /** Which bindings the deployment's manifest asked for (`askedBy`). */
        readonly asked: string
      }
    >()
    let revision = 0
    const syncLock = Semaphore.makeUnsafe(1)
    const bindings = yield* makeBindings({
      stateOf: (projectId) => states.get(projectId),
      queryTimeoutMs: settings.timeoutMs
    })
    runtime.setBindings(bindings.handler)
    runtime.setRawBindings(bindings.rawHandler)

    /** Reads every change since the last revision; a project whose secrets or grants changed gets its env again. */
    const sync = syncLock.withPermits(1)(
      Effect.gen(function* () {
        for (;;) {
          const page = yield* nodes.state(revision)
          for (const project of page.projects) {
            if (project.removed) {
              states.delete(project.projectId)
              envs.delete(project.projectId)
              bindings.converge(project.projectId, undefined)
            } else {
              states.set(project.projectId, project)
              bindings.converge(project.projectId, project)
              // workerd starts once the node has a deployment to serve, so its first request finds it running.
              if (project.deployment !== null) runtime.launch()
            }
          }
          const moved = page.revision !== revision
          revision = page.revision
          if (!moved || page.projects.length === 0) return
        }
      })
    )

    const envOf = Effect.fnUntraced(function* (projectId: string, manifest: Deployments.Manifest) {
      let project = states.get(projectId)
      if (project === undefined) {
        yield* sync
        project = states.get(projectId)
      }
      if (project === undefined) return { secrets: {}, bindings: {} } satisfies ProjectEnv
      const asked = askedBy(manifest)
      const signature = JSON.stringify([project.secrets, project.bindings, asked])
      const known = envs.get(projectId)
      if (known !== undefined && known.signature === signature) {
        envs.set(projectId, { ...known, project, asked })
        return known.env
      }
      // A project gone has no secrets; secrets that cannot be read now fail the request, never make an env without them.
      const opened = yield* Effect.catchTag(nodes.secrets(projectId), "NotFound", () => Effect.succeed({ items: [] }))
      const env: ProjectEnv = {
        secrets: Object.fromEntries(opened.items.map((item) => [item.name, item.value])),
        bindings: bindings.flagsOf(project, manifest)
      }
      envs.set(projectId, { signature, env, project, asked })
      return env
    })

    /** The env of a request's project, or why it cannot be made now (answered 503 `worker_unavailable`). */
    const envFor = (target: Edge.WorkerTarget) =>
      Effect.catchTag(envOf(target.projectId, target.manifest), "WorkerUnavailable", (error) => Effect.succeed(error))

    /** The env made from the project's current state, when there is one: a request's usual case, with no Effect. */
    const currentEnv = (projectId: string, manifest: Deployments.Manifest): ProjectEnv | undefined => {
      const known = envs.get(projectId)
      return known !== undefined && known.project === states.get(projectId) && known.asked === askedBy(manifest)
        ? known.env
        : undefined
    }

    /** The loader key of a deployment on an env: hashed once per (env, deployment), not once per request. */
    const keys = new WeakMap<ProjectEnv, Map<string, string>>()
    const keyOf = (target: Edge.WorkerTarget, env: ProjectEnv) => {
      let byDeployment = keys.get(env)
      if (byDeployment === undefined) keys.set(env, (byDeployment = new Map()))
      const known = byDeployment.get(target.deploymentId)
      if (known !== undefined && runtime.registered(known)) return known
      const key = runtime.register({
        projectId: target.projectId,
        deploymentId: target.deploymentId,
        digest: target.digest,
        manifest: target.manifest,
        entry: target.entry,
        secrets: env.secrets,
        bindings: env.bindings
      })
      byDeployment.set(target.deploymentId, key)
      return key
    }

    yield* sync
    // With the control plane's feed at hand (a server's own node), a raise of the node revision wakes the converge.
    const { watch } = yield* ConvergeWakeups
    const wakeups =
      watch !== undefined
        ? yield* Kernel.makeWakeups({
            subscribe: watch,
            next: (feed) => Effect.as(feed.next, true),
            retry: convergeEveryMs,
            lost: "worker invoker: the node revision feed is lost; reading the node state every second until it is back"
          })
        : undefined
    const converged =
      wakeups === undefined ? Effect.sleep(convergeEveryMs) : wakeups.wait(convergeHeardEveryMs, convergeEveryMs)
    yield* Effect.forkScoped(
      Effect.forever(
        converged.pipe(
          Effect.andThen(sync),
          Effect.catchCause((cause) => Effect.logWarning("node state read failed", cause))
        )
      )
    )

    const deadlines = makeDeadlines(settings.timeoutMs)

    const invoke = Effect.fn("WorkerInvoker.invoke")(function* (
      target: Edge.WorkerTarget,
      request: HttpServerRequest.HttpServerRequest
    ) {
      if (!settings.enabled) return envelope(503, "worker_unavailable", "worker code is off on this node")
      const incoming = NodeHttpServerRequest.toIncomingMessage(request) as Http.IncomingMessage
      const declared = Number(incoming.headers["content-length"] ?? "0")
      if (Number.isFinite(declared) && declared > maxRequestBodyBytes) {
        incoming.resume()
        return envelope(413, "payload_too_large", `request bodies are limited to ${maxRequestBodyBytes} bytes`)
      }
      const env = currentEnv(target.projectId, target.manifest) ?? (yield* envFor(target))
      if (env instanceof Errors.WorkerUnavailable) return envelope(503, "worker_unavailable", env.message)
      const key = keyOf(target, env)
      const scheme = (incoming.socket as TLSSocket).encrypted === true ? "https" : "http"
      const url = `${scheme}://${authorityOf(incoming) ?? "localhost"}${incoming.url ?? "/"}`
      // Read before the cookie is stripped: the worker gets a handle for the session, never the cookie.
      const user = bindings.userHandle(target.projectId, request.cookies[authSessionCookie])
      const invocation = beginOf(target, incoming.method ?? "GET", url)
      const outcome = yield* Effect.callback<Forwarded>((resume) => {
        const controller = new AbortController()
        forward({
          runtime,
          deadlines,
          target,
          key,
          url,
          scheme,
          incoming,
          user,
          invocation,
          signal: controller.signal
        }).then(
          (forwarded) => resume(Effect.succeed(forwarded)),
          (error: unknown) => resume(Effect.succeed({ _tag: "Unavailable", message: String(error) } as const))
        )
        return Effect.sync(() => controller.abort())
      })
      switch (outcome._tag) {
        case "Response": {
          const upstream = outcome.response
          const headers: Record<string, string> = {}
          for (const [name, value] of Object.entries(upstream.headers)) {
            if (value === undefined || hopHeaders.has(name)) continue
            headers[name] = Array.isArray(value) ? value.join(", ") : value
          }
          const setCookies = upstream.headers["set-cookie"] ?? []
          endWith(invocation, upstream)
          return HttpServerResponse.raw(upstream, {
            status: upstream.statusCode ?? 502,
            headers,
            ...(setCookies.length === 0 ? {} : { cookies: Cookies.fromSetCookie(setCookies) })
          })
        }
        default: {
          const refused = refusalOf(outcome, invocation)
          return envelope(refused.status, refused.code, refused.message)
        }
      }
    })

    /** An invocation of the worker: its event is this end joined with what the worker's entry module reports. */
    const beginOf = (target: Edge.WorkerTarget, method: string, url: string) =>
      collector.begin({ projectId: target.projectId, deploymentId: target.deploymentId, method, url })

    /** The edge's answer when the worker's is not forwarded, and the invocation's end. */
    const refusalOf = (
      outcome: Exclude<Forwarded, { readonly _tag: "Response" }>,
      invocation: Invocation
    ): { readonly status: number; readonly code: string; readonly message: string } => {
      switch (outcome._tag) {
        case "Exception":
          invocation.end({ outcome: "exception", status: null })
          return { status: 500, code: "worker_exception", message: "the worker threw an exception" }
        case "Timeout":
          invocation.end({ outcome: "timeout", status: null })
          return {
            status: 504,
            code: "worker_timeout",
            message: `the worker did not answer within ${settings.timeoutMs} ms`
          }
        // workerd saw the handler wait on nothing that could ever settle: it would never answer, so the 504 it
        // would get at the deadline is given now.
        case "Hung":
          invocation.end({ outcome: "timeout", status: null })
          return { status: 504, code: "worker_timeout", message: "the worker waits on nothing and can never answer" }
        case "TooLarge":
          invocation.end(null)
          return tooLarge
        case "Unavailable":
          invocation.end(null)
          return { status: 503, code: "worker_unavailable", message: "the worker runtime is not answering; try again" }
      }
    }

    const pools = makePools(runtime)
    yield* Effect.addFinalizer(() => Effect.promise(() => pools.closeAll()))

    const envContext = yield* Effect.context<never>()
    const runEnv = Effect.runPromiseWith(envContext)

    const serveNode = async (
      target: Edge.WorkerTarget,
      incoming: Http.IncomingMessage,
      response: Http.ServerResponse
    ): Promise<number> => {
      const refuse = (refused: { readonly status: number; readonly code: string; readonly message: string }) => {
        incoming.resume()
        // A body refused as too large is not read to its end (a client may stop sending it): the connection closes
        // after the answer, so no client sends its next request behind the rest of that body.
        if (!response.headersSent)
          response.writeHead(
            refused.status,
            refused === tooLarge ? { ...envelopeHeaders, connection: "close" } : envelopeHeaders
          )
        response.end(JSON.stringify({ code: refused.code, message: refused.message }))
        return refused.status
      }
      if (!settings.enabled)
        return refuse({ status: 503, code: "worker_unavailable", message: "worker code is off on this node" })
      const declared = Number(incoming.headers["content-length"] ?? "0")
      if (Number.isFinite(declared) && declared > maxRequestBodyBytes) return refuse(tooLarge)
      const env = currentEnv(target.projectId, target.manifest) ?? (await runEnv(envFor(target)))
      if (env instanceof Errors.WorkerUnavailable)
        return refuse({ status: 503, code: "worker_unavailable", message: env.message })
      const key = keyOf(target, env)
      const scheme = (incoming.socket as TLSSocket).encrypted === true ? "https" : "http"
      const url = `${scheme}://${authorityOf(incoming) ?? "localhost"}${incoming.url ?? "/"}`
      // Read before the cookie is stripped: the worker gets a handle for the session, never the cookie.
      const user = bindings.userHandle(target.projectId, cookieOf(incoming.headers.cookie, authSessionCookie))
      const invocation = beginOf(target, incoming.method ?? "GET", url)
      if (isBodiless(incoming)) {
        const forwarding: Forwarding = {
          runtime,
          pools,
          deadlines,
          target,
          key,
          url,
          scheme,
          incoming,
          user,
          invocation,
          response
        }
        let direct = await forwardInto(forwarding)
        // The hot process died under the request (killed, or its socket gone before the runtime saw it exit): a read
        // is asked again of the loader shard, which runs the same key, instead of failing the client.
        if (direct._tag === "Unavailable" && direct.hot && retryable.has(incoming.method ?? "GET"))
          direct = await forwardInto(forwarding, true)
        if (direct._tag === "Started") return direct.status
        if (direct._tag === "Gone") {
          invocation.end({ outcome: "canceled", status: null })
          return 499
        }
        return refuse(refusalOf(direct, invocation))
      }
      const controller = new AbortController()
      // The client went away before the worker answered: its request is canceled too.
      const gone = () => {
        if (!response.writableFinished) controller.abort()
      }
      response.once("close", gone)
      const outcome = await forward({
        runtime,
        deadlines,
        target,
        key,
        url,
        scheme,
        incoming,
        user,
        invocation,
        signal: controller.signal
      })
      if (outcome._tag !== "Response") {
        response.off("close", gone)
        if (controller.signal.aborted) {
          invocation.end({ outcome: "canceled", status: null })
          return 499
        }
        return refuse(refusalOf(outcome, invocation))
      }
      const upstream = outcome.response
      const headers: Record<string, string | Array<string>> = {}
      for (const [name, value] of Object.entries(upstream.headers)) {
        if (value === undefined || connectionHeaders.has(name) || name.startsWith(":")) continue
        headers[name] = value
      }
      const status = upstream.statusCode ?? 502
      response.writeHead(status, headers)
      endWith(invocation, upstream)
      upstream.on("error", () => response.destroy())
      upstream.pipe(response)
      return status
    }

    const spliceCall = (
      target: Edge.WorkerTarget,
      request: SpliceRequest,
      env: ProjectEnv,
      again: { readonly invocation: SpliceInvocation; readonly loaderOnly: boolean } | undefined
    ): SpliceCall | Promise<SpliceCall | undefined> | undefined => {
      const key = keyOf(target, env)
      const where = targetOf(runtime, target.projectId, key, again?.loaderOnly ?? false)
      if (where instanceof Promise) {
        return where.then((ready) =>
          ready === undefined ? undefined : spliceCallTo(target, request, key, ready, again)
        )
      }
      return spliceCallTo(target, request, key, where, again)
    }
    const spliceCallTo = (
      target: Edge.WorkerTarget,
      request: SpliceRequest,
      key: string,
      where: Target,
      again: { readonly invocation: SpliceInvocation; readonly loaderOnly: boolean } | undefined
    ): SpliceCall => {
      const url = `http://${request.headers.host}${request.target}`
      const user = bindings.userHandle(target.projectId, cookieOf(request.headers.cookie, authSessionCookie))
      const invocation = again?.invocation ?? beginOf(target, request.method, url)
      return {
        socket: where.socket,
        hot: where.hot,
        head: upstreamHead(
          `${request.method} ${request.target} HTTP/1.1`,
          { key, url, scheme: "http", given: request.headers, client: request.client, user, invocation },
          where.hot
        ),
        invocation,
        done: runtime.track(where.socket)
      }
    }
    const splice: WorkerSplice = {
      call: (target, request, again) => {
        if (!settings.enabled) return undefined
        const env = currentEnv(target.projectId, target.manifest)
        if (env !== undefined) return spliceCall(target, request, env, again)
        // A project's env not made yet (its first request, a secret or grant changed): made as serveNode makes it;
        // when it cannot be, serveNode answers.
        return runEnv(envFor(target)).then((made) =>
          made instanceof Errors.WorkerUnavailable ? undefined : spliceCall(target, request, made, again)
        )
      },
      answerOf: (call, status, headers) => {
        const failed = outcomeOf(headers["x-hostplane-outcome"]) ?? hotFailureOf(call.hot, status, headers)
        return failed === undefined ? undefined : envelopeOf(refusalOf(failed, call.invocation))
      },
      refuse: (call, why) =>
        envelopeOf(
          refusalOf(
            why === "timeout" ? { _tag: "Timeout" } : { _tag: "Unavailable", message: "the socket failed" },
            call.invocation
          )
        ),
      deadline: (fire) => {
        const deadline = deadlines.set(fire)
        return () => deadlines.clear(deadline)
      }
    }

    return WorkerInvoker.of({ invoke, serveNode, splice })
  })
)

/** The router's word that the worker did not answer (`x-hostplane-outcome`), or undefined for the worker's response. */
const outcomeOf = (header: unknown): { readonly _tag: "Exception" } | { readonly _tag: "Hung" } | undefined =>
  header === "exception" ? { _tag: "Exception" } : header === "hung" ? { _tag: "Hung" } : undefined

type Forwarded =
  | { readonly _tag: "Response"; readonly response: Http.IncomingMessage }
  | { readonly _tag: "Exception" }
  | { readonly _tag: "Hung" }
  | { readonly _tag: "Timeout" }
  | { readonly _tag: "TooLarge" }
  | { readonly _tag: "Unavailable"; readonly message: string }

/**
 * workerd's own answer when a worker on the hot shard gave none (it hung, or its isolate failed): a 500 with no
 * content type that closes the connection. The entry module turns every exception of the worker into the outcome
 * header there, and a worker's own 500 always has a content type.
 */
const hotFailureOf = (
  hot: boolean,
  status: number,
  headers: Readonly<Record<string, string | Array<string> | undefined>>
): { readonly _tag: "Hung" } | undefined =>
  hot && status === 500 && headers["content-type"] === undefined && headers.connection === "close"
    ? { _tag: "Hung" }
    : undefined

interface Target {
  readonly socket: string
  readonly hot: boolean
}

/**
 * Where a request goes: the hot shard's socket when it runs this key of the project, else the project's loader shard
 * once it is up; a promise only when that shard is not up yet (`undefined` when it did not come up within the worker
 * timeout), so the usual request takes no asynchronous step to find its target.
 */
const targetOf = (
  runtime: WorkerRuntime["Service"],
  projectId: string,
  key: string,
  loaderOnly = false
): Target | Promise<Target | undefined> => {
  const hot = loaderOnly ? undefined : runtime.hotSocketOf(projectId, key)
  if (hot !== undefined) return { socket: hot, hot: true }
  const shard = runtime.shardOf(projectId)
  if (runtime.isUp(shard)) return { socket: runtime.socketOf(shard), hot: false }
  return runtime.ready(shard, runtime.settings.timeoutMs).then(
    () => ({ socket: runtime.socketOf(shard), hot: false }),
    () => undefined
  )
}

/**
 * The worker deadlines of requests in flight: every request waits the same time, so the deadlines come due in the
 * order they were set, and one timer for the earliest serves them all (a timer per request cost more than the rest of
 * its bookkeeping). A request's entry is cleared when its response starts; cleared entries leave the queue's front as
 * new ones come.
 */
const makeDeadlines = (timeoutMs: number) => {
  interface Deadline {
    readonly at: number
    fire: (() => void) | undefined
  }
  let queue: Array<Deadline> = []
  let head = 0
  let timer: ReturnType<typeof setTimeout> | undefined
  const dropCleared = () => {
    while (head < queue.length && queue[head]!.fire === undefined) head++
    if (head === queue.length) {
      queue = []
      head = 0
    } else if (head >= 1024 && head * 2 >= queue.length) {
      queue = queue.slice(head)
      head = 0
    }
  }
  const due = () => {
    timer = undefined
    const now = Date.now()
    while (head < queue.length) {
      const next = queue[head]!
      if (next.fire !== undefined && next.at > now) break
      head++
      const fire = next.fire
      next.fire = undefined
      fire?.()
    }
    dropCleared()
    if (head < queue.length) arm(queue[head]!.at - now)
  }
  const arm = (ms: number) => {
    timer = setTimeout(due, Math.max(1, ms))
    timer.unref()
  }
  return {
    /** Calls `fire` once the worker timeout has passed, unless the answer's `clear` comes first. */
    set: (fire: () => void): Deadline => {
      dropCleared()
      const deadline: Deadline = { at: Date.now() + timeoutMs, fire }
      queue.push(deadline)
      if (timer === undefined) arm(timeoutMs)
      return deadline
    },
    clear: (deadline: Deadline | undefined) => {
      if (deadline !== undefined) deadline.fire = undefined
    }
  }
}
type Deadlines = ReturnType<typeof makeDeadlines>

/** One request to the shard's router, the body streamed and counted, under the response-start deadline. */
const forward = async (options: {
  readonly runtime: WorkerRuntime["Service"]
  readonly deadlines: Deadlines
  readonly target: Edge.WorkerTarget
  readonly key: string
  readonly url: string
  readonly scheme: string
  readonly incoming: Http.IncomingMessage
  /** The handle of the end user's session, for `env.auth` (the router hands it to the worker, no client can). */
  readonly user: string | undefined
  readonly invocation: Invocation
  readonly signal: AbortSignal
}): Promise<Forwarded> => {
  const { runtime, incoming } = options
  const target = await targetOf(runtime, options.target.projectId, options.key)
  if (target === undefined) return { _tag: "Timeout" }
  const headers = upstreamHeaders(
    { ...options, given: incoming.headers, client: incoming.socket.remoteAddress },
    target.hot
  )
  return new Promise<Forwarded>((resolve) => {
    const socketPath = target.socket
    // Counted until the worker's response ends: a shard's replaced process serves what it has before it stops.
    const done = runtime.track(socketPath)
    let settled = false
    const settle = (value: Forwarded) => {
      if (settled) return
      settled = true
      options.deadlines.clear(deadline)
      if (value._tag !== "Response") done()
      resolve(value)
    }
    const upstream = Http.request({
      socketPath,
      method: incoming.method,
      path: incoming.url,
      headers
    })
    // The worker's time starts once it has the whole request: a slow upload is not the worker's delay.
    let deadline: ReturnType<Deadlines["set"]> | undefined
    const startClock = () => {
      deadline = options.deadlines.set(() => {
        settle({ _tag: "Timeout" })
        upstream.destroy()
      })
    }
    options.signal.addEventListener("abort", () => {
      upstream.destroy()
      settle({ _tag: "Unavailable", message: "canceled" })
    })
    upstream.on("response", (response) => {
      const failed =
        outcomeOf(response.headers["x-hostplane-outcome"]) ??
        hotFailureOf(target.hot, response.statusCode ?? 500, response.headers)
      if (failed !== undefined) {
        response.resume()
        return settle(failed)
      }
      response.once("close", done)
      response.once("error", done)
      settle({ _tag: "Response", response })
      // The client went away: the worker's request is canceled too.
      incoming.once("close", () => {
        if (!incoming.complete || !response.complete) upstream.destroy()
      })
    })
    upstream.on("error", (error) => {
      done()
      settle({ _tag: "Unavailable", message: String(error) })
    })
    const hasBody = incoming.method !== "GET" && incoming.method !== "HEAD"
    if (!hasBody) {
      upstream.end()
      startClock()
      return
    }
    let received = 0
    incoming.on("data", (chunk: Buffer) => {
      // Past the limit the rest is read and dropped: pausing the request for good would leave its connection stuck
      // in the middle of a body, where no next request can be read.
      if (received > maxRequestBodyBytes) return
      received += chunk.length
      if (received > maxRequestBodyBytes) {
        upstream.destroy()
        settle({ _tag: "TooLarge" })
        return
      }
      if (!upstream.write(chunk)) {
        incoming.pause()
        upstream.once("drain", () => incoming.resume())
      }
    })
    incoming.on("end", () => {
      upstream.end()
      startClock()
    })
    incoming.on("error", () => upstream.destroy())
  })
}

interface UpstreamOptions {
  readonly key: string
  readonly url: string
  readonly scheme: string
  /** The client's headers, as node parses them (or as the byte lane scanned them: each once, names lowercased). */
  readonly given: Http.IncomingHttpHeaders
  readonly client: string | undefined
  readonly user: string | undefined
  readonly invocation: Invocation
}

/**
 * Each header of the request to the shard, in order: the client's, minus the dropped ones, plus the edge's own. Handed
 * to `emit` one by one, so the byte lane writes its head text without a header record in between.
 */
const eachUpstreamHeader = (
  options: UpstreamOptions,
  /** The request goes to the hot shard's socket of the worker. */
  hot: boolean,
  emit: (name: string, value: string | ReadonlyArray<string>) => void
): void => {
  const { given } = options
  for (const name in given) {
    const value = given[name]
    // HTTP/2's pseudo-headers (`:authority`, `:path`...) are no header of the HTTP/1.1 request to the shard.
    if (value === undefined || droppedHeaders.has(name) || name.startsWith("x-hostplane-") || name.startsWith(":"))
      continue
    if (name === "cookie") {
      const kept = withoutOwnCookies(Array.isArray(value) ? value.join("; ") : value)
      if (kept !== undefined) emit("cookie", kept)
      continue
    }
    emit(name, value)
  }
  // An HTTP/2 client names the host in `:authority` and usually sends no Host: the worker sees it as Host.
  if (given.host === undefined) {
    const authority = authorityIn(given)
    if (authority !== undefined) emit("host", authority)
  }
  emit("x-forwarded-for", options.client ?? "")
  emit("x-forwarded-proto", options.scheme)
  // The hot shard's socket serves one worker and takes the URL from the request: its entry module needs the
  // invocation's id and the end user's handle only, marked as the node's (the entry module hides a marked `cf` from
  // the tenant). The loader shard's router also needs the key and the URL.
  const user = options.user === undefined ? "" : `,"user":${JSON.stringify(options.user)}`
  emit(
    "x-hostplane-invoke",
    hot
      ? `{"hostplane":1,"id":${JSON.stringify(options.invocation.id)}${user}}`
      : `{"key":${JSON.stringify(options.key)},"url":${JSON.stringify(options.url)},"id":${JSON.stringify(options.invocation.id)}${user}}`
  )
}

/** The headers of the request to the shard, as a record (node's `http.request` and undici take one). */
const upstreamHeaders = (options: UpstreamOptions, hot: boolean): Record<string, string | Array<string>> => {
  const headers: Record<string, string | Array<string>> = {}
  eachUpstreamHeader(options, hot, (name, value) => {
    headers[name] = value as string | Array<string>
  })
  return headers
}

/** The request head for a shard's socket (latin1 text), for a request line and the headers `eachUpstreamHeader` gives. */
const upstreamHead = (requestLine: string, options: UpstreamOptions, hot: boolean): string => {
  let head = `${requestLine}\r\n`
  eachUpstreamHeader(options, hot, (name, value) => {
    if (typeof value === "string") head += `${name}: ${value}\r\n`
    else for (const one of value) head += `${name}: ${one}\r\n`
  })
  return `${head}\r\n`
}

/** A request with nothing to stream to the worker: a GET or HEAD that declares no body and expects no 100. */
const isBodiless = (incoming: Http.IncomingMessage) =>
  (incoming.method === "GET" || incoming.method === "HEAD") &&
  (incoming.headers["content-length"] === undefined || incoming.headers["content-length"] === "0") &&
  incoming.headers["transfer-encoding"] === undefined &&
  incoming.headers.expect === undefined

/**
 * undici pools to the shards' sockets, by socket path. A shard's replaced process has a socket of its own: the pool
 * of a socket no shard uses any more is closed once its requests are done (the runtime stops that process after
 * them). No timeouts of undici's own: the worker's deadline is the edge's, and a streamed response may be idle.
 */
const makePools = (runtime: WorkerRuntime["Service"]) => {
  const pools = new Map<string, Pool>()
  return {
    of: (socketPath: string): Pool => {
      let pool = pools.get(socketPath)
      if (pool === undefined) {
        const current = new Set(runtime.sockets())
        for (const [path, old] of pools) {
          if (current.has(path)) continue
          pools.delete(path)
          old.close().catch(() => {})
        }
        const UndiciPool = loadUndiciPool()
        pool = new UndiciPool("http://shard", { socketPath, headersTimeout: 0, bodyTimeout: 0 })
        pools.set(socketPath, pool)
      }
      return pool
    },
    closeAll: async () => {
      const all = [...pools.values()]
      pools.clear()
      await Promise.all(all.map((pool) => pool.destroy().catch(() => {})))
    }
  }
}

type Direct =
  | { readonly _tag: "Started"; readonly status: number }
  | { readonly _tag: "Gone" }
  | { readonly _tag: "Exception" }
  | { readonly _tag: "Hung" }
  | { readonly _tag: "Timeout" }
  | { readonly _tag: "Unavailable"; readonly message: string; readonly hot: boolean }

/** Methods a client expects to be safe to ask twice: only these are asked again after a hot process died. */
const retryable: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"])

interface Forwarding {
  readonly runtime: WorkerRuntime["Service"]
  readonly pools: ReturnType<typeof makePools>
  readonly deadlines: Deadlines
  readonly target: Edge.WorkerTarget
  readonly key: string
  readonly url: string
  readonly scheme: string
  readonly incoming: Http.IncomingMessage
  readonly user: string | undefined
  readonly invocation: Invocation
  readonly response: Http.ServerResponse
}

/**
 * A bodiless request to the shard's router whose answer is written straight into the edge's response: undici's
 * dispatch, no stream objects in between (the busiest path: most worker requests are GETs). Resolves once the
 * worker's response has started (its status), or with why it did not: the worker threw, missed the response-start
 * deadline, the shard did not answer, or the client went away first. `loaderOnly` skips the hot shard: the request is
 * asked again after the hot process died under it.
 */
const forwardInto = (options: Forwarding, loaderOnly = false): Promise<Direct> => {
  const target = targetOf(options.runtime, options.target.projectId, options.key, loaderOnly)
  if (!(target instanceof Promise)) return dispatchTo(options, target)
  return target.then((ready): Direct | Promise<Direct> =>
    ready === undefined ? { _tag: "Timeout" } : dispatchTo(options, ready)
  )
}

const dispatchTo = (options: Forwarding, target: Target): Promise<Direct> =>
  new Promise<Direct>((resolve) => {
    const { runtime, response, invocation } = options
    const headers = upstreamHeaders(
      { ...options, given: options.incoming.headers, client: options.incoming.socket.remoteAddress },
      target.hot
    )
    const socketPath = target.socket
    // Counted until the worker's response ends: a shard's replaced process serves what it has before it stops.
    const done = runtime.track(socketPath)
    let controller: Dispatcher.DispatchController | undefined
    let stopped = false
    let started = false
    let answered = 0
    let settled = false
    const settle = (value: Direct) => {
      if (settled) return
      settled = true
      options.deadlines.clear(deadline)
      if (value._tag !== "Started") done()
      resolve(value)
    }
    const stop = () => {
      stopped = true
      controller?.abort(new Error("canceled"))
    }
    // The request is whole once sent: the worker's time starts now.
    const deadline = options.deadlines.set(() => {
      settle({ _tag: "Timeout" })
      stop()
    })
    // The client went away: the worker's request is canceled too.
    response.on("close", () => {
      if (response.writableFinished) return
      if (started) invocation.end({ outcome: "canceled", status: answered })
      settle({ _tag: "Gone" })
      stop()
      done()
    })
    options.pools.of(socketPath).dispatch(
      { method: options.incoming.method ?? "GET", path: options.incoming.url ?? "/", headers },
      {
        onRequestStart: (at) => {
          controller = at
          if (stopped) at.abort(new Error("canceled"))
        },
        onResponseStart: (at, status, upstream) => {
          if (stopped || settled) return at.abort(new Error("canceled"))
          const failed = outcomeOf(upstream["x-hostplane-outcome"]) ?? hotFailureOf(target.hot, status, upstream)
          if (failed !== undefined) {
            stopped = true
            return settle(failed)
          }
          const written: Record<string, string | Array<string>> = {}
          for (const name in upstream) {
            const value = upstream[name]
            if (value === undefined || connectionHeaders.has(name) || name.startsWith(":")) continue
            written[name] = value
          }
          response.writeHead(status, written)
          started = true
          answered = status
          settle({ _tag: "Started", status })
        },
        onResponseData: (at, chunk) => {
          // Backpressure from the client: the worker's body waits until the client's socket drains.
          if (started && !stopped && !response.write(chunk)) {
            at.pause()
            response.once("drain", () => at.resume())
          }
        },
        onResponseEnd: () => {
          if (started && !stopped) {
            response.end()
            invocation.end({ outcome: "ok", status: answered })
          }
          done()
        },
        onResponseError: (_at, error) => {
          done()
          // The shard went away in the middle of the worker's answer.
          if (started) invocation.end({ outcome: "canceled", status: answered })
          if (started && !stopped) response.destroy()
          settle({ _tag: "Unavailable", message: String(error), hot: target.hot })
        }
      }
    )
  })

/**
 * The invoker in the control plane's process: its events go to the logs area (`Logs.RuntimeLogs`), and a raise of the
 * node revision wakes its converge.
 */
export const WorkerInvokerLive = WorkerInvokerOn.pipe(
  Layer.provide(Layer.merge(InvocationEvents.layer, ConvergeWakeups.layer))
)

/** A forwarded answer's end is its invocation's: whole, or cut off (the client or the shard went away). */
const endWith = (invocation: Invocation, upstream: Http.IncomingMessage) => {
  const status = upstream.statusCode ?? 502
  upstream.once("end", () => invocation.end({ outcome: "ok", status }))
  upstream.once("close", () => {
    if (!upstream.complete) invocation.end({ outcome: "canceled", status })
  })
}
