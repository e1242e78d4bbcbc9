import { Errors, Idempotency, Identity, type Kernel } from "@hostplane/core"
import { Effect, Exit, Option, Stream } from "effect"
import { Cookies, type HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createHash, type Hash } from "node:crypto"
import { HostActor } from "../auth/HostAuthenticator.ts"

const headerName = "idempotency-key"

/** Response headers that belong to one delivery, not to the answer a retry replays. */
const perDelivery = new Set(["x-request-id", "date", "content-length", "transfer-encoding", "connection", "set-cookie"])

const envelope = (status: number, code: string, message: string) =>
  HttpServerResponse.jsonUnsafe({ code, message }, { status })

const reused = envelope(
  Errors.statusOf(Errors.IdempotencyKeyReused.code),
  Errors.IdempotencyKeyReused.code,
  "this Idempotency-Key was first used for a different request (method, path or body): use a new key"
)

const bearerOf = (authorization: string | undefined): string | undefined => {
  const match = /^Bearer +(\S+)\s*$/i.exec(authorization ?? "")
  return match?.[1]
}

/** Bodies the handlers read whole (JSON, at most `maxJsonBody`) are read first; others are hashed as they stream. */
const readsWhole = (request: HttpServerRequest.HttpServerRequest) => {
  const type = request.headers["content-type"]
  return type === undefined || /^application\/json\s*(;|$)/i.test(type)
}

interface BodyDigest {
  /** The request as the handler sees it: its body stream feeds the hash. */
  readonly request: HttpServerRequest.HttpServerRequest
  /** The hex SHA-256 of the body, once it was read to its end. */
  readonly digest: () => Option.Option<string>
}

const hashing = (request: HttpServerRequest.HttpServerRequest): BodyDigest => {
  const hash: Hash = createHash("sha256")
  let digest: Option.Option<string> = Option.none()
  const stream = Stream.suspend(() => request.stream).pipe(
    Stream.tap((chunk) => Effect.sync(() => void hash.update(chunk))),
    Stream.onEnd(Effect.sync(() => void (digest = Option.some(hash.digest("hex")))))
  )
  // Only the body stream changes; everything else (headers, url, cached body readers) is the request's own.
  const wrapped = new Proxy(request, {
    get: (target, property) => (property === "stream" ? stream : Reflect.get(target, property, target))
  })
  return { request: wrapped, digest: () => digest }
}

// Read failures (a body over the limit, a broken connection) stay as they are for the pipeline to answer (413, 400).
const wholeBody = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.map(request.arrayBuffer, (bytes) => createHash("sha256").update(new Uint8Array(bytes)).digest("hex")).pipe(
    Effect.orDie
  )

/** The hash of a retry's body: the stream is read to its end (hashed, never kept). */
const drained = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.suspend(() => {
    const hash = createHash("sha256")
    return Stream.runForEach(request.stream, (chunk) => Effect.sync(() => void hash.update(chunk))).pipe(
      Effect.map(() => hash.digest("hex")),
      Effect.orDie
    )
  })

/** The answer kept for retries, or none when it must not be kept (see `idempotencyKeys`). */
const storable = (response: HttpServerResponse.HttpServerResponse): Option.Option<Idempotency.StoredResponse> => {
  if (response.status >= 500 || response.status === 401 || response.status === 429) return Option.none()
  if (/\bno-store\b/i.test(response.headers["cache-control"] ?? "") || !Cookies.isEmpty(response.cookies)) {
    return Option.none()
  }
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(response.headers)) {
    if (!perDelivery.has(name)) headers[name] = value
  }
  const body = response.body
  if (body._tag === "Empty") return Option.some({ status: response.status, headers, body: new Uint8Array() })
  if (body._tag !== "Uint8Array") return Option.none()
  headers["content-type"] = body.contentType
  return Option.some({ status: response.status, headers, body: body.body })
}

const replay = (stored: Idempotency.StoredResponse) => {
  const { "content-type": contentType, ...headers } = stored.headers
  const options = { status: stored.status, headers: { ...headers, "idempotent-replayed": "true" } }
  return contentType === undefined && stored.body.length === 0
    ? HttpServerResponse.empty(options)
    : HttpServerResponse.uint8Array(stored.body, { ...options, contentType })
}

/**
 * `Idempotency-Key` on every POST made with a user's session: the first request of a (user, key) runs and its answer
 * is kept 24 hours; a retry with the same method, path and body gets that answer again (`Idempotent-Replayed:
 * true`), with another request it is 422 `idempotency_key_reused`; a retry arriving while the first runs waits for
 * it. Kept: every answer the endpoint gave below 500 (2xx and 4xx alike, as Stripe does), once the whole body was
 * read. Not kept, so a retry runs afresh: requests refused before an endpoint ran (a malformed body or parameters,
 * an unknown route, a body refused before it was read), 401, 429, 5xx, and answers that carry a secret
 * (`Cache-Control: no-store`). A POST without a valid session (the dev login, webhooks) ignores the header.
 */
export const idempotencyKeys = Effect.gen(function* () {
  const idempotency = yield* Idempotency.Idempotency
  const identity = yield* Identity.Identity
  return <E, R>(
    request: HttpServerRequest.HttpServerRequest,
    httpApp: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E | HttpServerError.HttpServerError, R> => {
    // Every other request (each GET) passes straight through, without a step of its own.
    const key = request.method === "POST" ? request.headers[headerName] : undefined
    if (key === undefined) return httpApp
    const token = bearerOf(request.headers["authorization"])
    // Without a token the host's sign-in (or an in-process call's user) owns the key; an authenticator that failed
    // keys nothing (the endpoint answers its 503).
    const actor =
      token === undefined
        ? Effect.map(Effect.option(Effect.flatten(Effect.service(HostActor))), (actor) =>
            Option.flatMap(actor, Option.fromNullishOr)
          )
        : Effect.option(identity.authenticate(token))
    return keyedPost(request, key, actor, httpApp)
  }
  function keyedPost<E, R>(
    request: HttpServerRequest.HttpServerRequest,
    key: string,
    actorOf: Effect.Effect<Option.Option<Kernel.Actor>>,
    httpApp: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ) {
    return Effect.gen(function* () {
      const actor = yield* actorOf
      if (Option.isNone(actor)) return yield* httpApp
      if (!Idempotency.keyPattern.test(key)) {
        return envelope(400, "bad_request", "Idempotency-Key must be 1 to 255 visible ASCII characters")
      }
      const whole = readsWhole(request)
      // A JSON body is read (and limited) before anything is claimed, so a refused one keeps nothing.
      const known = whole ? Option.some(yield* wholeBody(request)) : Option.none<string>()
      const target = { method: request.method, path: request.url }
      const begun = yield* Effect.result(idempotency.begin(actor.value.userId, key, target))
      if (begun._tag === "Failure") {
        return envelope(409, Errors.IdempotencyKeyInUse.code, begun.failure.message)
      }
      if (begun.success._tag === "Done") {
        const record = begun.success.record
        if (record.method !== target.method || record.path !== target.path) return reused
        const digest = Option.isSome(known) ? known.value : yield* drained(request)
        return digest === record.bodySha256 && record.response !== null ? replay(record.response) : reused
      }
      const claim = begun.success.claim
      const body = whole ? undefined : hashing(request)
      const run =
        body === undefined ? httpApp : Effect.provideService(httpApp, HttpServerRequest.HttpServerRequest, body.request)
      // A request that is cut off keeps nothing: its retry runs afresh at once, not after the lease.
      const exit = yield* Effect.exit(
        idempotency.holding(claim, run).pipe(Effect.onInterrupt(() => idempotency.release(claim)))
      )
      const digest = Option.isSome(known) ? known : (body?.digest() ?? Option.none())
      const kept = Exit.isSuccess(exit) && Option.isSome(digest) ? storable(exit.value) : Option.none()
      yield* Option.isSome(kept) && Option.isSome(digest)
        ? idempotency.complete(claim, { bodySha256: digest.value, response: kept.value })
        : idempotency.release(claim)
      return yield* exit
    })
  }
})
