import { Kernel, Tls } from "@hostplane/core"
import * as Edge from "./Edge.ts"
import { Cause, Clock, Context, Effect, Logger, LogLevel, Option, References } from "effect"
import type { EventEmitter } from "node:events"
import type * as Http from "node:http"
import type * as Net from "node:net"
import { type SplicedConnection, spliceConnection } from "./ByteLane.ts"
import type { RequestHead } from "./HttpHead.ts"
import { fileHeaders, notModifiedHeaders } from "./EdgeHeaders.ts"
import { cookieOf, WorkerInvoker } from "./WorkerInvoker.ts"

/** The `Host` (or HTTP/2 `:authority`) without its port, in the canonical form hostnames are routed by. */
export const hostOf = (header: string | undefined): string =>
  Kernel.canonicalHost(
    (header ?? "")
      .trim()
      .replace(/^\[([^\]]*)\](:\d+)?$/, "$1")
      .replace(/:\d+$/, "")
  )

/** `hostOf` of the Host headers seen lately: a busy edge is asked for the same few names again and again. */
const hosts = new Map<string, string>()
const hostOfSeen = (header: string | undefined): string => {
  if (header === undefined) return hostOf(header)
  const known = hosts.get(header)
  if (known !== undefined) return known
  const host = hostOf(header)
  if (hosts.size >= 1_000) hosts.clear()
  hosts.set(header, host)
  return host
}

const authorityOf = (request: Http.IncomingMessage): string | undefined => {
  const authority = request.headers.host ?? request.headers[":authority"]
  return typeof authority === "string" ? authority : undefined
}

/** A path the URL parser keeps as it is, up to dot segments: no `\\`, no `//` start, no control characters. */
const plainPath = /^\/(?!\/)[A-Za-z0-9\-._~\/%!$&'()*+,;=:@]*$/

/**
 * Answers the lane worked out for a request it passed on to the edge app: the app uses them instead of asking the
 * edge's rules a second time.
 */
export const laneAnswers = new WeakMap<Http.IncomingMessage, Edge.EdgeAnswer>()

/**
 * The lane in front of one listener's edge app: call `next` to pass the request on to the app. A plain-HTTP
 * listener's lane also has a byte lane for its connections (`ByteLane.ts`): `next` hands one to node's HTTP server.
 */
export type EdgeLane = ((request: Http.IncomingMessage, response: Http.ServerResponse, next: () => void) => void) & {
  readonly connection?: (
    socket: Net.Socket,
    keepAliveMs: () => number,
    next: () => void,
    closed: () => void
  ) => SplicedConnection
}

type FileAnswer = Extract<Edge.EdgeAnswer, { readonly _tag: "File" }>

/** What the lane remembers of an answer: a worker to forward to, or a file whose bytes are in memory. */
type Remembered =
  | { readonly _tag: "Worker"; readonly generation: number; readonly target: Edge.WorkerTarget }
  | {
      readonly _tag: "File"
      readonly generation: number
      readonly answer: FileAnswer & { readonly body: Uint8Array }
      readonly headers: Record<string, string>
    }

/** A file answer the lane writes itself: its bytes are in memory (larger files stream through the edge app). */
const isHeldFile = (answer: Edge.EdgeAnswer): answer is FileAnswer & { readonly body: Uint8Array } =>
  answer._tag === "File" && answer.body !== undefined

/** The bytes of files the lane's memo may keep alive beyond the edge cache's own budget. */
const rememberedFileBudget = 32 * 1024 * 1024

/**
 * A request the lane may answer on node's response without reading it: no body to drain or refuse and no
 * `Expect` to answer, which Effect's HTTP server handles for the app.
 */
const bodiless = (request: Http.IncomingMessage) => {
  const length = request.headers["content-length"]
  return (
    (length === undefined || length === "0") &&
    request.headers["transfer-encoding"] === undefined &&
    request.headers.expect === undefined
  )
}

/** The annotations of the edge's line for one request. */
interface EdgeLine {
  readonly host: string
  readonly method: string
  readonly path: string
  readonly status: number
  readonly ms: number
}

/** How long the lane holds the lines of the requests it answered, so that one write carries many. */
export const lineBatchMs = 100

/** The lanes' batches not written yet, by their writers at exit. */
const heldBatches = new Set<() => void>()
let exitHooked = false

/** Writes every batch still held: the process's exit does, before the stdout batching writes what it holds. */
export const writeHeldLines = () => {
  for (const write of [...heldBatches]) write()
}

/**
 * Lines held and given to `write` in one batch `lineBatchMs` after the first of them (each batch costs a fiber and a
 * write to stdout whatever its size), or at the process's exit (`atExit`: nothing asynchronous runs any more), so a
 * stopping server's last requests keep their lines.
 */
export const makeLineBatches = <A>(write: (batch: Array<A>, atExit: boolean) => void) => {
  let held: Array<A> = []
  let timer: ReturnType<typeof setTimeout> | undefined
  const flush = (atExit: boolean) => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    heldBatches.delete(atExitWrite)
    const batch = held
    held = []
    if (batch.length > 0) write(batch, atExit)
  }
  const atExitWrite = () => flush(true)
  const due = () => flush(false)
  return (line: A) => {
    if (held.length === 0) {
      timer = setTimeout(due, lineBatchMs)
      if (!exitHooked) {
        exitHooked = true
        process.prependOnceListener("exit", writeHeldLines)
      }
      heldBatches.add(atExitWrite)
    }
    held.push(line)
  }
}

/**
 * `Effect.logInfo(message)` annotated with each line, for a whole batch in one step: the fiber's own loggers, minimum
 * level, clock and annotations, as `logInfo` reads them, with each line's annotations in the fiber's context while its
 * loggers run. The same lines as one `logInfo(...).pipe(annotateLogs(line))` each (a test pins them equal), without
 * an effect per line, which cost more than the rest of the line on the lane's path.
 */
export const logEach = (message: string, batch: ReadonlyArray<EdgeLine>): Effect.Effect<void> =>
  Effect.withFiber((fiber) => {
    if (batch.length === 0 || LogLevel.isGreaterThan(fiber.getRef(References.MinimumLogLevel), "Info")) {
      return Effect.void
    }
    const loggers = fiber.getRef(Logger.CurrentLoggers)
    if (loggers.size === 0) return Effect.void
    const clock = fiber.getRef(Clock.Clock)
    const context = fiber.context
    const annotations = fiber.getRef(References.CurrentLogAnnotations)
    try {
      for (const line of batch) {
        fiber.setContext(Context.add(context, References.CurrentLogAnnotations, { ...annotations, ...line }))
        const date = new Date(clock.currentTimeMillisUnsafe())
        for (const logger of loggers) {
          logger.log({ message: [message], logLevel: "Info", cause: Cause.empty, fiber, date })
        }
      }
    } finally {
      fiber.setContext(context)
    }
    return Effect.void
  })

/**
 * The edge's lane for worker requests and in-memory files: the same rules (`Edge.handle`) decide, and when they send
 * the request to a worker, it is forwarded on node's own request and response; when they answer with a bundle file
 * held in memory (or a 304 for it), the lane writes it with the edge app's headers. Neither goes through Effect's HTTP
 * server (most of such a request's cost on the edge was that layer). The answers for public deployments are
 * remembered per host, method and path while the edge's view (`Edge.generation`) is unchanged, so a repeated request
 * runs no rule at all. Everything else (streamed files, the service's `/__service/*` routes, refusals, the TLS
 * listener's redirects and challenges, failures) passes on to the edge app unchanged, with the answer already worked
 * out. Each request the lane answers logs the edge's line and is counted by `counted`.
 */
export const makeEdgeLane = (
  scheme: "http" | "https",
  counted: (status: number, count: number) => Effect.Effect<void>
): Effect.Effect<EdgeLane, never, Edge.Edge | WorkerInvoker | Tls.EdgeTls> =>
  Effect.gen(function* () {
    const edge = yield* Edge.Edge
    const invoker = yield* WorkerInvoker
    const tls = Kernel.portOn(yield* Tls.EdgeTls)
    const context = yield* Effect.context<never>()
    const run = Effect.runPromiseWith(context)
    const fork = Effect.runForkWith(context)
    const runSync = Effect.runSyncWith(context)
    // The edge's line and count of each request the lane answered, written in batches: one fiber per batch, not per
    // request, on the busiest path; each status counted once per batch.
    const line = makeLineBatches<EdgeLine>((batch, atExit) => {
      const statuses = new Map<number, number>()
      for (const line of batch) statuses.set(line.status, (statuses.get(line.status) ?? 0) + 1)
      const written = Effect.andThen(
        logEach("edge request", batch),
        Effect.forEach(statuses, ([status, count]) => counted(status, count), { discard: true })
      )
      if (!atExit) return void fork(written)
      try {
        runSync(written)
      } catch {
        // An exit is no place to fail: what could not be written is lost with the process.
      }
    })
    const answered = (host: string, method: string, path: string, status: number, started: number) =>
      line({ host, method, path, status, ms: Date.now() - started })
    // Answers for public deployments, by host, method and path, while the edge's view is unchanged: a worker's target,
    // or a held file with its headers. A file's answer depends on nothing else the request carries (its 304 is
    // worked out here from the remembered ETag); a private deployment's depends on the visitor's pass.
    const remembered = new Map<string, Remembered>()
    let rememberedBytes = 0
    const forgetAll = () => {
      remembered.clear()
      rememberedBytes = 0
    }
    const remember = (key: string, generation: number | undefined, answer: Edge.EdgeAnswer) => {
      if (generation === undefined) return
      if (remembered.size >= 10_000) forgetAll()
      if (answer._tag === "Worker" && !answer.private) {
        remembered.set(key, { _tag: "Worker", generation, target: answer })
      } else if (isHeldFile(answer) && !answer.private) {
        const bytes = answer.body.byteLength
        if (rememberedBytes + bytes > rememberedFileBudget) forgetAll()
        const before = remembered.get(key)
        if (before?._tag === "File") rememberedBytes -= before.answer.body.byteLength
        rememberedBytes += bytes
        remembered.set(key, { _tag: "File", generation, answer, headers: fileHeaders(answer) })
      }
    }
    /** Writes a held file (or its 304) on node's response: what the edge app writes for the same answer. */
    const writeFile = (
      response: Http.ServerResponse,
      answer: FileAnswer & { readonly body: Uint8Array },
      headers: Record<string, string>,
      ifNoneMatch: string | undefined
    ): number => {
      if (answer.status === 200 && Edge.etagMatches(ifNoneMatch, answer.etag)) {
        response.writeHead(304, notModifiedHeaders({ _tag: "NotModified", etag: answer.etag, private: answer.private }))
        response.end()
        return 304
      }
      response.writeHead(answer.status, headers)
      if (answer.bodyless) response.end()
      else response.end(answer.body)
      return answer.status
    }
    // The service's own paths read forms and set cookies: the app's. So are the TLS listener's redirects. The path
    // is read as the edge's rules read it (`//x/__service/...` is one too).
    const appsOnly = (host: string, path: string) =>
      !plainPath.test(path) ||
      path.includes("/__service/") ||
      (scheme === "http" && Option.isSome(tls) && (path.startsWith(Tls.challengePrefix) || tls.value.covers(host)))
    const lane = (request: Http.IncomingMessage, response: Http.ServerResponse, next: () => void) => {
      const url = request.url ?? "/"
      const query = url.indexOf("?")
      const path = query < 0 ? url : url.slice(0, query)
      const host = hostOfSeen(authorityOf(request))
      if (appsOnly(host, path)) return next()
      const started = Date.now()
      const method = request.method ?? "GET"
      const forward = (target: Edge.WorkerTarget) =>
        invoker.serveNode(target, request, response).then(
          (status) => answered(host, method, path, status, started),
          () => {
            if (!response.headersSent) response.writeHead(500)
            response.end()
          }
        )
      const key = `${method === "GET" || method === "HEAD" ? method : "write"} ${host} ${path}`
      const generation = edge.generation()
      const known = remembered.get(key)
      if (known !== undefined && known.generation === generation) {
        if (known._tag === "Worker") {
          void forward(known.target)
          return
        }
        if (bodiless(request)) {
          const ifNoneMatch = request.headers["if-none-match"]
          answered(host, method, path, writeFile(response, known.answer, known.headers, ifNoneMatch), started)
          return
        }
      }
      const cookie = request.headers.cookie
      const bypass = request.headers["service-access-bypass"]
      run(
        edge.handle({
          host,
          method,
          url,
          bypass: typeof bypass === "string" ? bypass : undefined,
          session: cookieOf(cookie, Edge.accessCookie),
          ifNoneMatch: request.headers["if-none-match"],
          wantsHtml: (request.headers.accept ?? "").includes("text/html"),
          client: request.socket?.remoteAddress
        })
      ).then(
        (answer) => {
          remember(key, generation, answer)
          if (answer._tag === "Worker") return forward(answer)
          if (bodiless(request) && !response.headersSent) {
            if (isHeldFile(answer)) {
              const status = writeFile(response, answer, fileHeaders(answer), request.headers["if-none-match"])
              return answered(host, method, path, status, started)
            }
            if (answer._tag === "NotModified") {
              response.writeHead(304, notModifiedHeaders(answer))
              response.end()
              return answered(host, method, path, 304, started)
            }
          }
          laneAnswers.set(request, answer)
          return next()
        },
        // A failure (the control database gone) is the app's to map, on the same request.
        () => next()
      )
    }
    const splice = invoker.splice
    if (scheme === "https" || splice === undefined) return lane
    /** The worker of a request head by the same rules and remembered answers; a promise when they must run. */
    const workerOf = (head: RequestHead, client: string | undefined) => {
      const host = hostOfSeen(head.headers.host)
      if (appsOnly(host, head.path)) return undefined
      const key = `${head.method} ${host} ${head.path}`
      const generation = edge.generation()
      const known = remembered.get(key)
      if (known !== undefined && known.generation === generation) {
        return known._tag === "Worker" ? known.target : undefined
      }
      const headers = head.headers
      return run(
        edge.handle({
          host,
          method: head.method,
          url: head.target,
          bypass: headers["service-access-bypass"],
          session: cookieOf(headers.cookie, Edge.accessCookie),
          ifNoneMatch: headers["if-none-match"],
          wantsHtml: (headers.accept ?? "").includes("text/html"),
          client
        })
      ).then((answer) => {
        remember(key, generation, answer)
        return answer._tag === "Worker" ? answer : undefined
      })
    }
    const deps = {
      workerOf,
      splice,
      answered: (head: RequestHead, status: number, started: number) =>
        answered(hostOfSeen(head.headers.host), head.method, head.path, status, started)
    }
    return Object.assign(lane, {
      connection: (socket: Net.Socket, keepAliveMs: () => number, next: () => void, closed: () => void) =>
        spliceConnection(socket, { ...deps, keepAliveMs }, next, closed)
    })
  })

/**
 * Puts `lane` in front of a server's request handlers: each request reaches the handlers (the edge app that
 * `NodeHttpServer` attaches) only when the lane passes it on.
 */
export const installLane = <S extends EventEmitter>(server: S, lane: EdgeLane): S => {
  const emit = server.emit.bind(server) as (event: string | symbol, ...args: Array<any>) => boolean
  const connection = lane.connection
  const http = server as unknown as Http.Server
  const spliced = new Set<SplicedConnection>()
  ;(server as EventEmitter).emit = (event: string | symbol, ...args: Array<any>) => {
    if (event === "connection" && connection !== undefined) {
      const one = connection(
        args[0],
        () => http.keepAliveTimeout,
        () => emit(event, ...args),
        () => spliced.delete(one)
      )
      spliced.add(one)
      return true
    }
    if (event !== "request") return emit(event, ...args)
    lane(args[0], args[1], () => emit(event, ...args))
    return true
  }
  if (connection === undefined) return server
  // The byte lane's connections are not node's server's until handed over: its stop and its sweeps reach them here.
  // A stop closes each as soon as its response in flight ends, as node's server closes its own.
  const close = http.close.bind(http)
  http.close = ((callback?: (error?: Error) => void) => {
    for (const one of spliced) one.closeWhenIdle()
    return close(callback)
  }) as typeof http.close
  const closeIdle = http.closeIdleConnections.bind(http)
  http.closeIdleConnections = () => {
    for (const one of spliced) one.closeIfIdle()
    closeIdle()
  }
  const closeAll = http.closeAllConnections.bind(http)
  http.closeAllConnections = () => {
    for (const one of spliced) one.destroy()
    closeAll()
  }
  return server
}
