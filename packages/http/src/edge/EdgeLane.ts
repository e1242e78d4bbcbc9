import { Edge, Kernel, Tls } from "@hostplane/core"
import { Effect, Option } from "effect"
import type { EventEmitter } from "node:events"
import type * as Http from "node:http"
import { cookieOf, WorkerInvoker } from "./WorkerInvoker.ts"

/** The `Host` (or HTTP/2 `:authority`) without its port, in the canonical form hostnames are routed by. */
export const hostOf = (header: string | undefined): string =>
  Kernel.canonicalHost(
    (header ?? "")
      .trim()
      .replace(/^\[([^\]]*)\](:\d+)?$/, "$1")
      .replace(/:\d+$/, "")
  )

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

/** The lane in front of one listener's edge app: call `next` to pass the request on to the app. */
export type EdgeLane = (request: Http.IncomingMessage, response: Http.ServerResponse, next: () => void) => void

/**
 * The edge's lane for worker requests: the same rules (`Edge.handle`) decide, and when they send the request to a
 * worker, it is forwarded on node's own request and response, without Effect's HTTP server in between (most of a
 * worker request's cost on the edge was that layer). Everything else (files, the service's `/__service/*` routes,
 * refusals, the TLS listener's redirects and challenges, failures) passes on to the edge app unchanged, with the
 * answer already worked out. Each request the lane answers logs the edge's line and is counted by `counted`.
 */
export const makeEdgeLane = (
  scheme: "http" | "https",
  counted: (status: number) => Effect.Effect<void>
): Effect.Effect<EdgeLane, never, Edge.Edge | WorkerInvoker | Tls.EdgeTls> =>
  Effect.gen(function* () {
    const edge = yield* Edge.Edge
    const invoker = yield* WorkerInvoker
    const tls = Kernel.portOn(yield* Tls.EdgeTls)
    const context = yield* Effect.context<never>()
    const run = Effect.runPromiseWith(context)
    const fork = Effect.runForkWith(context)
    // The edge's line and count of each request the lane answered, written in batches: one fiber per batch, not per
    // request, on the busiest path.
    let lines: Array<{ host: string; method: string; path: string; status: number; ms: number }> = []
    const writeLines = () => {
      const batch = lines
      lines = []
      fork(
        Effect.forEach(
          batch,
          (line) =>
            Effect.andThen(Effect.logInfo("edge request").pipe(Effect.annotateLogs(line)), counted(line.status)),
          { discard: true }
        )
      )
    }
    const answered = (host: string, method: string, path: string, status: number, started: number) => {
      if (lines.length === 0) setTimeout(writeLines, 10)
      lines.push({ host, method, path, status, ms: Date.now() - started })
    }
    // Worker answers for public deployments, by host, kind of method and path, while the edge's view is unchanged.
    const workers = new Map<string, { readonly generation: number; readonly target: Edge.WorkerTarget }>()
    const remember = (key: string, generation: number | undefined, answer: Edge.EdgeAnswer) => {
      if (generation === undefined || answer._tag !== "Worker" || answer.private) return
      if (workers.size >= 10_000) workers.clear()
      workers.set(key, { generation, target: answer })
    }
    return (request, response, next) => {
      const url = request.url ?? "/"
      const query = url.indexOf("?")
      const path = query < 0 ? url : url.slice(0, query)
      const host = hostOf(authorityOf(request))
      // The service's own paths read forms and set cookies: the app's. So are the TLS listener's redirects. The path
      // is read as the edge's rules read it (`//x/__service/...` is one too).
      if (
        !plainPath.test(path) ||
        path.includes("/__service/") ||
        (scheme === "http" && Option.isSome(tls) && (path.startsWith(Tls.challengePrefix) || tls.value.covers(host)))
      ) {
        return next()
      }
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
      const key = `${method === "GET" || method === "HEAD" ? "read" : "write"} ${host} ${path}`
      const generation = edge.generation()
      const known = workers.get(key)
      if (known !== undefined && known.generation === generation) {
        void forward(known.target)
        return
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
          if (answer._tag !== "Worker") {
            laneAnswers.set(request, answer)
            return next()
          }
          return forward(answer)
        },
        // A failure (the control database gone) is the app's to map, on the same request.
        () => next()
      )
    }
  })

/**
 * Puts `lane` in front of a server's request handlers: each request reaches the handlers (the edge app that
 * `NodeHttpServer` attaches) only when the lane passes it on.
 */
export const installLane = <S extends EventEmitter>(server: S, lane: EdgeLane): S => {
  const emit = server.emit.bind(server) as (event: string | symbol, ...args: Array<any>) => boolean
  ;(server as EventEmitter).emit = (event: string | symbol, ...args: Array<any>) => {
    if (event !== "request") return emit(event, ...args)
    lane(args[0], args[1], () => emit(event, ...args))
    return true
  }
  return server
}
