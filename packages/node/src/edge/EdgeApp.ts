import { NodeHttpServerRequest } from "@effect/platform-node"
import * as Edge from "./Edge.ts"
import { Cause, Clock, Effect, Option } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { lostDatabase, withAsciiLocation } from "@hostplane/http/server/RequestPipeline"
import { cachingOf, everyResponse } from "./EdgeHeaders.ts"
import { hostOf, laneAnswers } from "./EdgeLane.ts"
import { WorkerInvoker } from "./WorkerInvoker.ts"

/** The posted password form is small; anything larger is refused unread. */
const maxFormBytes = 8 * 1024

const readForm = (request: HttpServerRequest.HttpServerRequest) =>
  Number(request.headers["content-length"] ?? "0") > maxFormBytes
    ? Effect.succeed<Record<string, string>>({})
    : request.text.pipe(
        Effect.map((text) => Object.fromEntries(new URLSearchParams(text.slice(0, maxFormBytes)))),
        Effect.orElseSucceed((): Record<string, string> => ({}))
      )

/** What a `__Host-` cookie must carry; browsers treat `localhost` names as secure, so it works in development too. */
const cookieFlags = (maxAge: number) => `Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=${maxAge}`

/** The service's own answers (the password form, its errors and redirects): never framed, loading nothing. */
const servicePage = {
  "x-frame-options": "DENY",
  "content-security-policy": "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "referrer-policy": "no-referrer"
}

/** The cookies an answer sets: host-only, Secure, HttpOnly, SameSite=Lax; `maxAge` 0 removes one. */
const withCookies = (response: HttpServerResponse.HttpServerResponse, cookies: ReadonlyArray<Edge.EdgeCookie> = []) =>
  cookies.reduce(
    (current, cookie) =>
      HttpServerResponse.setCookieUnsafe(current, cookie.name, cookie.value, {
        path: "/",
        secure: true,
        httpOnly: true,
        sameSite: "lax",
        maxAge: `${cookie.maxAge} seconds`
      }),
    cookies.length === 0 ? response : HttpServerResponse.setHeader(response, "cache-control", "no-store")
  )

const retryAfter = (seconds: number | undefined): Record<string, string> =>
  seconds === undefined ? {} : { "retry-after": String(seconds) }

const toResponse = (answer: Exclude<Edge.EdgeAnswer, { readonly _tag: "Worker" }>) => {
  switch (answer._tag) {
    case "File": {
      const headers = { etag: answer.etag, ...cachingOf(answer.private) }
      return answer.bodyless
        ? HttpServerResponse.empty({
            status: answer.status,
            headers: { ...headers, "content-type": answer.contentType, "content-length": String(answer.file.bytes) }
          })
        : answer.body !== undefined
          ? HttpServerResponse.uint8Array(answer.body, {
              status: answer.status,
              contentType: answer.contentType,
              headers
            })
          : HttpServerResponse.stream(answer.file.content, {
              status: answer.status,
              contentType: answer.contentType,
              contentLength: answer.file.bytes,
              headers
            })
    }
    case "NotModified":
      return HttpServerResponse.empty({ status: 304, headers: { etag: answer.etag, ...cachingOf(answer.private) } })
    case "Json":
      return withCookies(
        HttpServerResponse.jsonUnsafe(answer.body, { status: answer.status, headers: { "cache-control": "no-store" } }),
        answer.cookies
      )
    case "Redirect":
      if (answer.cookies !== undefined) {
        return withCookies(HttpServerResponse.redirect(answer.location, { status: 303 }), answer.cookies)
      }
      return HttpServerResponse.redirect(answer.location, {
        status: 303,
        headers:
          answer.setSession === undefined
            ? {}
            : {
                "set-cookie": `${Edge.accessCookie}=${answer.setSession.value}; ${cookieFlags(answer.setSession.maxAge)}`,
                "cache-control": "no-store"
              }
      })
    case "Problem":
      return HttpServerResponse.jsonUnsafe(
        { code: answer.code, message: answer.message },
        { status: answer.status, headers: retryAfter(answer.retryAfter) }
      )
    case "Page":
      return HttpServerResponse.html(answer.html).pipe(
        HttpServerResponse.setStatus(answer.status),
        HttpServerResponse.setHeaders(retryAfter(answer.retryAfter))
      )
  }
}

/**
 * The edge listener: every request, whatever its host, goes through the core `Edge` rules; the answer becomes a
 * streamed file, a redirect that sets the access cookie, a page or an error envelope. One log line per request.
 */
export const edgeApp = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const edge = yield* Edge.Edge
  const started = yield* Clock.currentTimeMillis
  const host = hostOf(request.headers["host"])
  const isPasswordPost = request.method === "POST" && request.url.split("?")[0] === "/__service/access/password"
  // The lane in front of the listener may have asked the rules already (for a request it passed on).
  const worked = laneAnswers.get(NodeHttpServerRequest.toIncomingMessage(request) as never)
  const answer =
    worked !== undefined
      ? worked
      : yield* edge.handle({
          host,
          method: request.method,
          url: request.url,
          bypass: request.headers["service-access-bypass"],
          session: request.cookies[Edge.accessCookie],
          ifNoneMatch: request.headers["if-none-match"],
          wantsHtml: (request.headers["accept"] ?? "").includes("text/html"),
          form: isPasswordPost ? yield* readForm(request) : undefined,
          client: Option.getOrUndefined(request.remoteAddress),
          cookies: request.cookies
        })
  let response: HttpServerResponse.HttpServerResponse
  if (answer._tag === "Worker") {
    // The worker's own response goes out as it answered; only the edge's refusals carry the edge's headers.
    response = yield* (yield* WorkerInvoker).invoke(answer, request)
  } else {
    const served = toResponse(answer)
    const own = answer._tag !== "File" && answer._tag !== "NotModified"
    response = withAsciiLocation(
      HttpServerResponse.setHeaders(served, own ? { ...everyResponse, ...servicePage } : everyResponse)
    )
  }
  yield* Effect.logInfo("edge request").pipe(
    Effect.annotateLogs({
      host,
      method: request.method,
      path: request.url.split("?")[0] ?? "/",
      status: response.status,
      ms: (yield* Clock.currentTimeMillis) - started
    })
  )
  return response
}).pipe(
  Effect.catchCause((cause) => {
    const failure = Cause.findErrorOption(cause)
    const defect = Cause.findDefect(cause)
    const error = Option.isSome(failure) ? failure.value : defect._tag === "Success" ? defect.success : undefined
    // A host the edge does not hold yet, while the control database is down: spec part 1's 503, not a fault here.
    return lostDatabase(error)
      ? Effect.as(
          Effect.logWarning("edge: the control database does not answer", cause),
          HttpServerResponse.jsonUnsafe(
            { code: "no_core", message: "the control database does not answer; try again shortly" },
            { status: 503, headers: { ...everyResponse, "retry-after": "5" } }
          )
        )
      : Effect.as(
          Effect.logError("edge failure", cause),
          HttpServerResponse.jsonUnsafe({ code: "internal", message: "internal error" }, { status: 500 })
        )
  })
)
