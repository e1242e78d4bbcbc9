import { ByteSize, Cause, Clock, Context, Effect, Exit, Metric, Option, Schema, SchemaIssue } from "effect"
import {
  HttpIncomingMessage,
  HttpMethod,
  HttpRouter,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "effect/http"
import { HttpApiError } from "effect/http-api"
import type { Envelope } from "@hostplane/api/errors/ApiError"
import { idempotencyKeys } from "../idempotency/IdempotencyKeys.ts"
import {
  anonymous,
  HostActor,
  HostAuthenticatorError,
  hostAuthenticatorUnavailable
} from "../auth/HostAuthenticator.ts"
import type { Kernel } from "@hostplane/core"
import { bodyIssues, type InputIssue, urlIssues } from "./InputText.ts"

/** A route of the API, for telling 405 (path known, method not) from 404. */
export interface KnownRoute {
  readonly method: string
  /** The route as declared (`/v1/invites/:token`). */
  readonly template: string
  readonly pattern: RegExp
  /** The endpoint carries its operation's rule: the session middleware authorizes it before reading the input. */
  readonly ruled?: boolean
}

/**
 * Text the API refuses in the body of a ruled route (`InputText.ts`), found before routing: the route's rule is
 * checked first (decisions.md part 12), then the session middleware refuses it as `InvalidInputText`.
 */
export const PendingInputIssues = Context.Reference<ReadonlyArray<InputIssue> | undefined>(
  "@hostplane/http/PendingInputIssues",
  { defaultValue: () => undefined }
)

/** The refusal of `PendingInputIssues` once authorized: a defect the pipeline answers 400, and nothing is kept. */
export class InvalidInputText {
  readonly _tag = "InvalidInputText"
  readonly issues: ReadonlyArray<InputIssue>
  constructor(issues: ReadonlyArray<InputIssue>) {
    this.issues = issues
  }
}

/** Path parameters that carry a secret: they never reach a log line. */
const secretParams = new Set([":token"])

const hasSecretParam = (route: KnownRoute) => route.template.split("/").some((segment) => secretParams.has(segment))

/** The path as logged: secret-bearing segments of the matched route (an invite token) become `***`. */
const loggedPath = (path: string, route: KnownRoute | undefined): string => {
  if (route === undefined) return path
  const template = route.template.split("/")
  return path
    .split("/")
    .map((segment, i) => (secretParams.has(template[i] ?? "") ? "***" : segment))
    .join("/")
}

export const routePattern = (path: string): RegExp =>
  new RegExp(
    "^" +
      path
        .split("/")
        .map((segment) => (segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
        .join("/") +
      "/?$"
  )

const json = (status: number, body: Envelope, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe(body, { status, headers })

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

const issuesOf = (error: Schema.SchemaError) =>
  formatIssues(error.issue).issues.map((issue) => ({
    path: (issue.path ?? []).map((segment) =>
      typeof segment === "object" && segment !== null && "key" in segment ? String(segment.key) : String(segment)
    ),
    message: issue.message
  }))

/** JSON bodies above this are 413; uploads that stream set their own limit. */
export const maxJsonBody = ByteSize.mebibytes(1)

/** An incoming `X-Request-Id` kept as the request's id; anything else gets a new one. */
export const requestIdPattern = /^[A-Za-z0-9._-]{8,128}$/

/** `req_` and a random UUID's 32 hex digits (its dashes cut by position: a regex replace cost as much as the UUID). */
export const newRequestId = () => {
  const uuid = globalThis.crypto.randomUUID()
  return `req_${uuid.slice(0, 8)}${uuid.slice(9, 13)}${uuid.slice(14, 18)}${uuid.slice(19, 23)}${uuid.slice(24)}`
}

/**
 * On when the host serves metrics (`SERVICE_METRICS_LISTEN`): each request is then counted under its route template,
 * which costs a scan of the routes that a request otherwise skips.
 */
export const RequestMetrics = Context.Reference<boolean>("@hostplane/http/RequestMetrics", {
  defaultValue: () => false
})

/** Series by route template (never the raw path, whose ids would make a series per resource), method and status. */
const requestsTotal = Metric.counter("hostplane_http_requests_total", {
  description: "API requests answered, by route template (other: outside the API's routes), method and status",
  incremental: true
})
const requestSeconds = Metric.histogram("hostplane_http_request_duration_seconds", {
  description: "Time from a request's arrival to its response head, by route template and method",
  boundaries: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
})

const recordRequest = (route: KnownRoute | undefined, method: string, status: number, ms: number) =>
  recordRoute(route?.template ?? "other", method, status, ms)

/** Counts one answered request under its route template (`other`: outside the API's routes). */
export const recordRoute = (template: string, method: string, status: number, ms: number) => {
  const labels = { route: template, method }
  return Effect.andThen(
    Metric.update(Metric.withAttributes(requestsTotal, { ...labels, status: String(status) }), 1),
    Metric.update(Metric.withAttributes(requestSeconds, labels), ms / 1000)
  )
}

/**
 * What the host knows of the control database's health, so a request never waits on a frozen PostgreSQL: a statement
 * sent to a server that stopped answering (SIGSTOP, a stuck disk, a half-open network) waits forever, and even
 * abandoning it waits for the driver's cancel. The host's watch pings on a connection of its own.
 */
export interface CoreWatch {
  /** True while the database is found not answering. */
  readonly isDown: () => boolean
  /** Calls `onDown` once the database is found not answering (at once while it is); answers how to unsubscribe. */
  readonly onDown: (onDown: () => void) => () => void
  /**
   * Asks the database now while it counts as down (one question shared by concurrent askers, bounded as the watch's
   * own) and answers whether it is up: a write arriving right after it came back is not refused on the watch's last
   * finding, which may be up to a ping interval old.
   */
  readonly recheck: Effect.Effect<boolean>
  /** Paths answered whatever the database does (liveness, readiness with its own bound). */
  readonly exempt: ReadonlySet<string>
}

/** The host's `CoreWatch`; none by default (a host without one relies on its driver's own timeouts). */
export const CoreWatch = Context.Reference<CoreWatch | undefined>("@hostplane/http/CoreWatch", {
  defaultValue: () => undefined
})

const noCore = () => json(503, { code: "no_core", message: "the control database does not answer; try again shortly" })

/**
 * Runs the handling in a fiber of its own and answers 503 `no_core` as soon as `watch` finds the database not
 * answering, leaving that fiber to be interrupted in the background (it may wait for its statement's cancel). A
 * request answered without waiting (a cached `GET /v1/me`) is served even then. A request with a body that arrives
 * while the database counts as down is refused before a byte of it is read unless the database answers when asked
 * again: stopping a body read midway closes the socket, and the 503 with it.
 */
const guarded = <E, R>(
  handling: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
  watch: CoreWatch,
  hasBody: boolean
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> =>
  hasBody && watch.isDown()
    ? Effect.flatMap(watch.recheck, (up) => (up ? guarded(handling, watch, false) : Effect.succeed(noCore())))
    : Effect.flatMap(Effect.forkDetach(handling, { startImmediately: true }), (fiber) => {
        const done = fiber.pollUnsafe()
        if (done !== undefined) return done
        return Effect.callback<HttpServerResponse.HttpServerResponse, E>((resume) => {
          let offDown = () => {}
          const offExit = fiber.addObserver((exit) => {
            offDown()
            resume(exit)
          })
          offDown = watch.onDown(() => {
            offExit()
            offDown()
            fiber.interruptUnsafe()
            resume(Effect.succeed(noCore()))
          })
          return Effect.sync(() => {
            offExit()
            offDown()
            fiber.interruptUnsafe()
          })
        })
      })

/** A GET that may be answered before the router (undefined: it goes the whole way), by its exact URL. */
export type Shortcut = (
  request: HttpServerRequest.HttpServerRequest
) => Effect.Effect<HttpServerResponse.HttpServerResponse | undefined>

/**
 * Every response leaves here: failures the typed handlers did not answer (bad bodies, unknown routes, defects)
 * become the error envelope, each response gets `X-Request-Id`, and one log line records it. Inside it, a POST
 * with an `Idempotency-Key` is run once per key (`idempotencyKeys`), a GET of a `shortcuts` URL tries its
 * shortcut before the router.
 */

export const requestPipeline = <R = never, RHost = never>(
  routes: ReadonlyArray<KnownRoute>,
  options: {
    readonly shortcuts?: Effect.Effect<ReadonlyMap<string, Shortcut>, never, R>
    /** The host's sign-in for a request without a token (`hostActorResolver`); undefined when there is none. */
    readonly hostActor?: Effect.Effect<HostActorOf | undefined, never, RHost>
  } = {}
) => {
  // A request with a body tests its own method's patterns, once: a body is read only for a route that exists. Every
  // other request tests only the few routes with a secret in the path, for its log line.
  const byMethod = new Map<string, Array<KnownRoute>>()
  for (const route of routes) byMethod.set(route.method, [...(byMethod.get(route.method) ?? []), route])
  const matching = (method: string, path: string) => byMethod.get(method)?.find((route) => route.pattern.test(path))
  const secretRoutes = routes.filter(hasSecretParam)
  const secretRoute = (path: string) => secretRoutes.find((route) => route.pattern.test(path))
  return HttpRouter.middleware(
    Effect.map(
      Effect.all([
        idempotencyKeys,
        options.shortcuts ?? Effect.succeed(new Map<string, Shortcut>()),
        Effect.service(RequestMetrics),
        options.hostActor ?? Effect.succeed(undefined),
        Effect.service(CoreWatch)
      ]),
      ([keyed, byUrl, metrics, hostActorOf, watch]) =>
        (httpApp) =>
          Effect.gen(function* () {
            const request = yield* HttpServerRequest.HttpServerRequest
            const incoming = request.headers["x-request-id"]
            const requestId = incoming !== undefined && requestIdPattern.test(incoming) ? incoming : newRequestId()
            const started = yield* Clock.currentTimeMillis
            const path = request.url.split("?")[0] ?? "/"
            const hasBody = HttpMethod.hasBody(request.method)
            const matched = hasBody ? matching(request.method, path) : undefined
            const inUrl = urlIssues(request.url)
            const shortcut = request.method === "GET" ? byUrl.get(request.url) : undefined
            const checked =
              inUrl.length > 0
                ? Effect.succeed(invalidText(inUrl))
                : shortcut !== undefined
                  ? Effect.flatMap(shortcut(request), (answer) =>
                      answer === undefined ? keyed(request, httpApp) : Effect.succeed(answer)
                    )
                  : !hasBody
                    ? keyed(request, httpApp)
                    : Effect.provideService(
                        // Bodies are read only for a route that exists, so a wrong path stays 404 without a byte read.
                        Effect.matchCauseEffect(
                          bodyIssues(request, { readBody: matched !== undefined, maxBodyBytes }),
                          {
                            onFailure: (cause) => fromCause(cause, request.method, path, routes, requestId),
                            onSuccess: Option.match({
                              onNone: () => keyed(request, httpApp),
                              onSome: (issues) =>
                                matched?.ruled === true
                                  ? Effect.provideService(keyed(request, httpApp), PendingInputIssues, issues)
                                  : Effect.succeed(invalidText(issues))
                            })
                          }
                        ),
                        HttpIncomingMessage.MaxBodySize,
                        maxJsonBody
                      )
            const asCaller = yield* hostCaller(hostActorOf, request)
            const handled = asCaller(checked)
            const exit = yield* Effect.exit(
              watch === undefined || watch.exempt.has(path) ? handled : guarded(handled, watch, hasBody)
            )
            if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) {
              return yield* Effect.failCause(exit.cause)
            }
            let response = Exit.isSuccess(exit)
              ? exit.value
              : yield* fromCause(exit.cause, request.method, path, routes, requestId)
            response = withAsciiLocation(withChallenge(withEnvelope(response), request))
            response = HttpServerResponse.setHeader(response, "x-request-id", requestId)
            const elapsed = (yield* Clock.currentTimeMillis) - started
            if (metrics)
              yield* recordRequest(matched ?? matching(request.method, path), request.method, response.status, elapsed)
            // The request's span (named by its route, `spanNames`) carries the id its response and log line carry.
            yield* Effect.annotateCurrentSpan("http.request_id", requestId)
            yield* Effect.logInfo("request").pipe(
              Effect.annotateLogs({
                requestId,
                method: request.method,
                path: loggedPath(path, matched ?? (secretRoutes.length > 0 ? secretRoute(path) : undefined)),
                status: response.status,
                ms: elapsed
              })
            )
            return response
          })
    ),
    { global: true }
  )
}

/** Resolves the actor of a request without a token (the host's authenticator, then the user). */
export type HostActorOf = (
  request: HttpServerRequest.HttpServerRequest
) => Effect.Effect<Kernel.Actor | undefined, HostAuthenticatorError>

/**
 * A request without an `Authorization` header is the host's signed-in user, asked of the authenticator only when an
 * endpoint needs an actor, and at most once per request. An in-process call has set its user already.
 */
const hostCaller = Effect.fnUntraced(function* (
  hostActorOf: HostActorOf | undefined,
  request: HttpServerRequest.HttpServerRequest
) {
  if (hostActorOf === undefined || request.headers["authorization"] !== undefined || (yield* HostActor) !== anonymous) {
    return <A, E, R>(effect: Effect.Effect<A, E, R>) => effect
  }
  const once = yield* Effect.cached(hostActorOf(request))
  return <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, HostActor, once)
})

const maxBodyBytes = Number(maxJsonBody)

const invalidText = (issues: ReadonlyArray<InputIssue>) =>
  json(400, { code: "bad_request", message: "invalid text in the request", details: { issues } })

/**
 * A database connection that could not be opened or was lost (`effect/sql`'s `ConnectionError`, carried by a
 * `SqlError` or wrapped once more by a store): the control database is down, which spec part 1 answers as 503
 * `no_core`, not as a fault of this server.
 */
export const lostDatabase = (error: unknown): boolean => {
  for (let current = error, depth = 0; typeof current === "object" && current !== null && depth < 5; depth++) {
    const { _tag, reason, cause } = current as { _tag?: unknown; reason?: { _tag?: unknown }; cause?: unknown }
    if (_tag === "ConnectionError" || reason?._tag === "ConnectionError") return true
    current = cause
  }
  return false
}

const fromCause = (
  cause: Cause.Cause<unknown>,
  method: string,
  path: string,
  routes: ReadonlyArray<KnownRoute>,
  requestId: string
) =>
  Effect.gen(function* () {
    const failure = Cause.findErrorOption(cause)
    const defect = Cause.findDefect(cause)
    const error = Option.isSome(failure) ? failure.value : defect._tag === "Success" ? defect.success : undefined
    if (error instanceof InvalidInputText) return invalidText(error.issues)
    if (HttpApiError.HttpApiSchemaError.is(error) && error.kind !== "Body" && error.kind !== "ResponseHeaders") {
      return json(400, {
        code: "bad_request",
        message: `invalid ${error.kind.toLowerCase()}`,
        details: { issues: issuesOf(error.cause) }
      })
    }
    if (error instanceof HttpApiError.HttpApiPayloadTooLarge) {
      return json(413, { code: "payload_too_large", message: "the request body is too large" })
    }
    if (error instanceof HttpServerError.HttpServerError) {
      const reason = error.reason
      if (reason._tag === "RouteNotFound") {
        const allowed = routes.filter((route) => route.pattern.test(path)).map((route) => route.method)
        if (allowed.length > 0 && !allowed.includes(method)) {
          return json(
            405,
            { code: "method_not_allowed", message: `${method} is not allowed here` },
            { allow: [...new Set(allowed)].join(", ") }
          )
        }
        return json(404, { code: "not_found", message: `no route for ${method} ${path}` })
      }
      if (reason._tag === "RequestParseError") {
        return reason.reason === "BodyTooLarge"
          ? json(413, { code: "payload_too_large", message: "the request body is too large" })
          : json(400, { code: "bad_request", message: "the request body could not be read" })
      }
    }
    if (error instanceof HostAuthenticatorError) {
      yield* Effect.logWarning("the host's authenticator failed", error.message).pipe(
        Effect.annotateLogs({ requestId })
      )
      return hostAuthenticatorUnavailable(error)
    }
    if (lostDatabase(error)) {
      yield* Effect.logWarning("the control database does not answer", cause).pipe(Effect.annotateLogs({ requestId }))
      return noCore()
    }
    yield* Effect.logError("unhandled failure", cause).pipe(Effect.annotateLogs({ requestId }))
    return json(500, { code: "internal", message: "internal error", details: { requestId } })
  })

/**
 * Header values leave as Latin-1 bytes, so a `Location` built from user input (an OAuth redirect, a `next` path) is
 * sent with everything outside printable ASCII percent-encoded as UTF-8: `/☃` goes out as `/%E2%98%83`.
 */
export const asciiLocation = (location: string): string =>
  location.toWellFormed().replace(/[^\x21-\x7e]/gu, (char) => encodeURIComponent(char))

/** Every redirect of a listener leaves through here (the API's pipeline and the edge). */
export const withAsciiLocation = (response: HttpServerResponse.HttpServerResponse) => {
  const location = response.headers["location"]
  return location === undefined ? response : HttpServerResponse.setHeader(response, "location", asciiLocation(location))
}

const bareCodes: Record<number, Envelope> = {
  400: { code: "bad_request", message: "bad request" },
  401: { code: "unauthorized", message: "sign in first" },
  403: { code: "forbidden", message: "forbidden" },
  404: { code: "not_found", message: "not found" },
  405: { code: "method_not_allowed", message: "method not allowed" },
  413: { code: "payload_too_large", message: "the request body is too large" },
  415: {
    code: "unsupported_media_type",
    message: "this content type is not accepted here: JSON bodies are application/json, bundles application/gzip"
  }
}

/** Error responses the framework renders without a body get the envelope too. */
const withEnvelope = (response: HttpServerResponse.HttpServerResponse) => {
  const envelope = bareCodes[response.status]
  if (envelope === undefined) return response
  const contentType =
    response.headers["content-type"] ??
    (response.body._tag === "Uint8Array" || response.body._tag === "Raw" ? response.body.contentType : undefined)
  // A page (the invite page's 404) is a deliberate body too.
  if (response.body._tag !== "Empty" && /^(application\/json|text\/html)/.test(contentType ?? "")) return response
  return json(response.status, envelope, { ...response.headers, "content-type": "application/json" })
}

/**
 * A 401 names the scheme to sign in with (RFC 6750); a route with its own scheme (git's Basic) sets its own.
 * `invalid_token` tells a client with a stale token apart from one that sent none.
 */
const withChallenge = (
  response: HttpServerResponse.HttpServerResponse,
  request: HttpServerRequest.HttpServerRequest
) => {
  if (response.status !== 401 || response.headers["www-authenticate"] !== undefined) return response
  const presented = request.headers["authorization"] !== undefined
  return HttpServerResponse.setHeader(
    response,
    "www-authenticate",
    presented ? 'Bearer realm="hostplane", error="invalid_token"' : 'Bearer realm="hostplane"'
  )
}
