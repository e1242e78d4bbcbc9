import { Identity } from "@hostplane/core"
import { Effect, Exit, References, Tracer } from "effect"
import type * as Http from "node:http"
import { newRequestId, recordRoute, RequestMetrics, requestIdPattern } from "../server/RequestPipeline.ts"
import { cachedMeAnswer, cachedMePath } from "./CachedMe.ts"

/** A lane in front of a listener's Effect app: it answers a request itself or calls `next` to pass it on unchanged. */
export type MeLane = (request: Http.IncomingMessage, response: Http.ServerResponse, next: () => void) => void

/** A GET whose answer is written without reading it: no body to drain or refuse, no `Expect` to answer. */
const bodiless = (request: Http.IncomingMessage) => {
  const length = request.headers["content-length"]
  return (
    (length === undefined || length === "0") &&
    request.headers["transfer-encoding"] === undefined &&
    request.headers.expect === undefined
  )
}

/**
 * The warm `GET /v1/me` on node's own request and response, in front of Effect's HTTP server. It answers exactly what
 * the request pipeline's shortcut (`cachedMe`) answers, with the same headers, `X-Request-Id` rule and log line (and
 * metrics when they are on); anything else — another method or URL, a body, a cold or paused cache, a personal access
 * token — passes on to the app unchanged. It exists for speed alone, as the edge's lane does: on this request Effect's
 * HTTP server, the router middleware and the pipeline were most of the server's CPU, and the one busy thread capped
 * the rate (`npm run bench:me-ab`, 4 alternated runs at load 15-18: server CPU per request 0.60x, 89-93 µs against
 * 146-171 µs through the pipeline's shortcut). With an observable tracer installed (OTLP) it stays out of the way, so
 * every request keeps its span.
 */
export const makeMeLane: Effect.Effect<MeLane | undefined, never, Identity.Identity> = Effect.gen(function* () {
  const traced = (yield* References.TracerEnabled) && (yield* Effect.tracer) !== Tracer.nativeTracer
  if (traced) return undefined
  const answer = yield* cachedMeAnswer
  const metrics = yield* RequestMetrics
  const context = yield* Effect.context<never>()
  const runSync = Effect.runSyncExitWith(context)
  const fork = Effect.runForkWith(context)
  // The request's line (and count) written in batches, one fiber per batch rather than per request, as the edge's
  // lane does: the same annotations the pipeline gives a request's line.
  let lines: Array<{ requestId: string; method: string; path: string; status: number; ms: number }> = []
  const writeLines = () => {
    const batch = lines
    lines = []
    fork(
      Effect.forEach(
        batch,
        (line) => {
          const logged = Effect.logInfo("request").pipe(Effect.annotateLogs(line))
          return metrics ? Effect.andThen(logged, recordRoute(cachedMePath, line.method, line.status, line.ms)) : logged
        },
        { discard: true }
      )
    )
  }
  return (request, response, next) => {
    if (request.method !== "GET" || request.url !== cachedMePath || !bodiless(request)) return next()
    const authorization = request.headers.authorization
    if (authorization === undefined) return next()
    const started = Date.now()
    const exit = runSync(answer(authorization))
    if (Exit.isFailure(exit) || exit.value === undefined) return next()
    const body = exit.value
    const incoming = request.headers["x-request-id"]
    const requestId = typeof incoming === "string" && requestIdPattern.test(incoming) ? incoming : newRequestId()
    response.writeHead(200, {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(body)),
      "x-request-id": requestId
    })
    response.end(body)
    if (lines.length === 0) setTimeout(writeLines, 10)
    lines.push({ requestId, method: "GET", path: cachedMePath, status: 200, ms: Date.now() - started })
  }
})
