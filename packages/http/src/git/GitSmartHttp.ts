import { NodeHttpServerRequest, NodeStream } from "@effect/platform-node"
import { Git, type Kernel } from "@hostplane/core"
import { Cause, Effect, Exit, Option, Scope, Stream } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import * as Http from "node:http"
import * as Net from "node:net"
import { Readable } from "node:stream"
import * as Tls from "node:tls"
import * as Zlib from "node:zlib"

/** Where smart HTTP is served: `<public url>/git/<org>/<project>/<repo>.git/...`. */
export const gitPathPrefix = "/git/"

const routePattern = /^\/git\/([^/]+)\/([^/]+)\/([^/]+)\/(info\/refs|git-upload-pack|git-receive-pack)$/u

const services = new Set(["git-upload-pack", "git-receive-pack"])

/** Request body encodings git's smart HTTP clients send (gzip for large requests); any other is 415. */
const readableEncodings = new Set(["", "identity", "gzip", "x-gzip"])

const protocolPattern = /^[A-Za-z0-9=:._-]{1,200}$/u

const challenge = { "www-authenticate": 'Basic realm="hostplane"' }

const envelope = (status: number, code: string, message: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe({ code, message }, { status, headers })

/** One pkt-line of text (git's protocol framing: four hex digits of length, then the payload). */
const pktLine = (text: string): Uint8Array => {
  const payload = new TextEncoder().encode(text)
  const header = (payload.length + 4).toString(16).padStart(4, "0")
  return new Uint8Array([...new TextEncoder().encode(header), ...payload])
}

/**
 * Whether a request body is a whole protocol v2 `command=fetch` request: valid pkt-lines from the command line to a
 * final flush-pkt. git answers such a request only after reading all of it, with an `ERR` pkt-line for what it
 * refuses, so its output can go to the client unseen by the server.
 */
export const isFetchRequest = (bytes: Uint8Array): boolean => {
  let position = 0
  let last = -1
  while (position < bytes.length) {
    if (position + 4 > bytes.length) return false
    const hex = Buffer.from(bytes.subarray(position, position + 4)).toString("latin1")
    if (!/^[0-9a-f]{4}$/u.test(hex)) return false
    const length = Number.parseInt(hex, 16)
    if (length === 3 || (length > 3 && position + length > bytes.length)) return false
    if (position === 0) {
      // git sends the command line without its newline; other clients may end it with one.
      const command = Buffer.from(bytes.subarray(4, length)).toString("latin1")
      if (command !== "command=fetch" && command !== "command=fetch\n") return false
    }
    last = length
    position += length < 4 ? 4 : length
  }
  return last === 0
}

/** The largest fetch request read whole to decide on the direct answer; git sends larger ones chunked anyway. */
const directFetchLimit = 1024 * 1024

/**
 * A fetch whose pack git may write straight into the client's plain TCP connection: protocol v2, a body of known
 * length read whole (gunzipped when sent gzipped) and a whole fetch request, an HTTP/1.1 response not begun on a
 * connection without TLS. Its input's first step writes the response head, close-delimited (git's bytes cannot be
 * chunked), and waits until it is on the connection: git writes nothing before it has read the request. `body` is
 * the bytes read when the request is answered the ordinary way.
 */
const directFetch = (
  request: HttpServerRequest.HttpServerRequest,
  protocol: string | null,
  gzipped: boolean
): Effect.Effect<
  | { readonly body: Stream.Stream<Uint8Array, unknown>; readonly request?: Uint8Array; readonly socket?: undefined }
  | {
      readonly body: Stream.Stream<Uint8Array, unknown>
      readonly input: Stream.Stream<Uint8Array, unknown>
      readonly request: Uint8Array
      readonly socket: Net.Socket
      readonly response: Http.ServerResponse
    }
  | null
> =>
  Effect.gen(function* () {
    if (!(protocol ?? "").split(":").includes("version=2")) return null
    const length = Number(request.headers["content-length"] ?? Number.NaN)
    if (!Number.isSafeInteger(length) || length < 0 || length > directFetchLimit) return null
    const response = NodeHttpServerRequest.toServerResponse(request)
    if (!(response instanceof Http.ServerResponse) || response.headersSent) return null
    const socket = response.socket
    if (!(socket instanceof Net.Socket) || socket instanceof Tls.TLSSocket || socket.destroyed) return null
    const read = yield* Effect.exit(request.arrayBuffer)
    if (Exit.isFailure(read)) return null
    const raw = new Uint8Array(read.value)
    const body = Stream.make(raw)
    let plain: Uint8Array
    try {
      plain = gzipped ? Zlib.gunzipSync(raw, { maxOutputLength: 16 * directFetchLimit }) : raw
    } catch {
      return { body }
    }
    if (!isFetchRequest(plain)) return { body, request: plain }
    const head = Effect.callback<void>((resume) => {
      // Without chunked encoding and a length Node closes the connection after the response: the body's end.
      response.useChunkedEncodingByDefault = false
      response.writeHead(200, {
        "content-type": "application/x-git-upload-pack-result",
        "cache-control": "no-cache, max-age=0, must-revalidate",
        expires: "Fri, 01 Jan 1980 00:00:00 GMT"
      })
      response.flushHeaders()
      socket.write(new Uint8Array(0), () => resume(Effect.void))
    })
    return {
      body,
      input: Stream.concat(Stream.drain(Stream.fromEffect(head)), Stream.make(plain)),
      request: plain,
      socket,
      response
    }
  })

const decode = (segment: string): string | undefined => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return undefined
  }
}

/** The password of a Basic `Authorization` header (the username is ignored); undefined when none is sent. */
const basicPassword = (header: string | undefined): Option.Option<string> | undefined => {
  if (header === undefined) return undefined
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/iu.exec(header)
  if (match === null) return Option.none()
  const decoded = Buffer.from(match[1]!, "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  return colon < 0 ? Option.none() : Option.some(decoded.slice(colon + 1))
}

/**
 * Git's smart HTTP protocol on the real `git` (`upload-pack` / `receive-pack --stateless-rpc`): Basic auth with an
 * access token as the password (and a `WWW-Authenticate` challenge so credential helpers work), the same rule as
 * SSH, `Git-Protocol` passed through, request bodies (gzip too) and responses streamed.
 */
export const gitSmartHttp = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const repos = yield* Git.Repos
    const tokens = yield* Git.AccessTokens

    const handle: Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest> =
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const url = new URL(request.url, "http://localhost")
        const match = routePattern.exec(url.pathname)
        const segments = match?.slice(1, 4).map(decode)
        if (match === null || segments === undefined || segments.some((segment) => segment === undefined)) {
          return envelope(404, "not_found", "not a git repository URL: /git/<org>/<project>/<repo>.git")
        }
        const [orgSlug, projectName, rawRepo] = segments as [string, string, string]
        const path: Git.RepoPath = { orgSlug, projectName, repoName: rawRepo.replace(/\.git$/u, "") }
        const action = match[4]!
        const encoding = (request.headers["content-encoding"] ?? "").trim().toLowerCase()
        let service: string
        let mode: Git.GitRun["mode"]
        if (action === "info/refs") {
          if (request.method !== "GET")
            return envelope(405, "method_not_allowed", `${request.method} is not allowed here`)
          service = url.searchParams.get("service") ?? ""
          if (!services.has(service)) {
            return envelope(403, "forbidden", "only git's smart HTTP protocol is served (?service=git-upload-pack)")
          }
          mode = "advertise"
        } else {
          if (request.method !== "POST")
            return envelope(405, "method_not_allowed", `${request.method} is not allowed here`)
          service = action
          mode = "stateless"
          if (request.headers["content-type"] !== `application/x-${service}-request`) {
            return envelope(415, "unsupported_media_type", `the body must be application/x-${service}-request`)
          }
          if (!readableEncodings.has(encoding)) {
            return envelope(415, "unsupported_media_type", "the body must be sent plain or gzip-encoded")
          }
        }
        const password = basicPassword(request.headers["authorization"])
        let userId: Kernel.UserId | null = null
        if (password !== undefined) {
          const actor = Option.isSome(password)
            ? yield* Effect.option(tokens.authenticate(password.value))
            : Option.none()
          if (Option.isNone(actor)) {
            return envelope(401, "unauthorized", "unknown, revoked or expired access token", challenge)
          }
          userId = actor.value.userId
        }
        const granted = yield* Effect.result(
          repos.authorizeTransport(userId, path, service === "git-receive-pack" ? "write" : "read")
        )
        if (granted._tag === "Failure") {
          const error = granted.failure
          if (error._tag === "Unauthorized") {
            return envelope(401, "unauthorized", "sign in with an access token as the password", challenge)
          }
          return envelope(
            error._tag === "NotFound" ? 404 : 403,
            error._tag === "NotFound" ? "not_found" : "forbidden",
            error.message
          )
        }
        const offered = request.headers["git-protocol"]
        const protocol = offered !== undefined && protocolPattern.test(offered) ? offered : null
        const gzipped = encoding === "gzip" || encoding === "x-gzip"
        const direct =
          service === "git-upload-pack" && mode === "stateless" ? yield* directFetch(request, protocol, gzipped) : null
        const body = direct?.body ?? request.stream
        const input: Stream.Stream<Uint8Array, unknown> =
          mode === "advertise"
            ? Stream.empty
            : direct?.socket !== undefined
              ? direct.input
              : gzipped
                ? NodeStream.pipeThroughDuplex(body, { evaluate: () => Zlib.createGunzip(), onError: (cause) => cause })
                : body
        // The git process lives as long as its response stream, not as long as this handler.
        const scope = yield* Scope.make()
        const started = yield* Effect.exit(
          Scope.provide(
            repos.serve(
              granted.success,
              {
                service: service === "git-receive-pack" ? "receive-pack" : "upload-pack",
                mode,
                protocol,
                ...(direct?.request === undefined ? {} : { request: direct.request }),
                ...(direct?.socket === undefined ? {} : { outputSocket: direct.socket })
              },
              input
            ),
            scope
          )
        )
        if (Exit.isFailure(started)) {
          yield* Scope.close(scope, Exit.void)
          const error = Option.getOrUndefined(Cause.findErrorOption(started.cause))
          if (error === undefined) return yield* Effect.die(Cause.squash(started.cause))
          if (error._tag === "GitRefused") return envelope(400, "bad_request", error.message)
          return envelope(503, error._tag === "GitUnavailable" ? "git_unavailable" : "git_unreachable", error.message)
        }
        const announces = mode === "advertise" && !(protocol ?? "").split(":").includes("version=2")
        const options = {
          contentType: `application/x-${service}-${mode === "advertise" ? "advertisement" : "result"}`,
          headers: { "cache-control": "no-cache, max-age=0, must-revalidate", expires: "Fri, 01 Jan 1980 00:00:00 GMT" }
        }
        if (direct?.socket !== undefined) {
          // git wrote the response body into the connection itself (or its output is written here, after the head
          // the input sent, when the storage streams it): the response ends with the connection, once git is done.
          const response = direct.response
          const running = started.value
          yield* Effect.callback<void>((resume) => {
            if (running.wroteToSocket === true) return resume(Effect.void)
            const native = running.nativeOutput
            if (!(native instanceof Readable)) return resume(Effect.void)
            const done = () => resume(Effect.void)
            native.once("close", done)
            response.once("close", done)
            native.pipe(response, { end: false })
          }).pipe(
            Effect.andThen(running.exitCode),
            Effect.ensuring(
              Effect.andThen(
                Scope.close(scope, Exit.void),
                Effect.sync(() => response.end())
              )
            ),
            Effect.onInterrupt(() => Effect.sync(() => response.destroy()))
          )
          return HttpServerResponse.empty({ status: 200 })
        }
        const native = started.value.nativeOutput
        if (!announces && native instanceof Readable) {
          // git's output piped to the socket by Node itself (a clone's pack): no Effect stream step per 64 KiB chunk.
          // The scope closes once the output has ended (after git exits) or the response is gone (git is stopped).
          const response = NodeHttpServerRequest.toServerResponse(request)
          const running = started.value
          yield* Effect.callback<boolean>((resume) => {
            const done = () => {
              native.off("close", done)
              response.off("close", done)
              resume(Effect.succeed(native.readableEnded))
            }
            native.on("close", done)
            response.on("close", done)
          }).pipe(
            Effect.flatMap((ended) => (ended ? running.exitCode : Effect.void)),
            Effect.ensuring(Scope.close(scope, Exit.void)),
            Effect.forkDetach
          )
          return HttpServerResponse.raw(native, options)
        }
        const announced = announces
          ? Stream.make(pktLine(`# service=${service}\n`), new TextEncoder().encode("0000"))
          : Stream.empty
        const output = Stream.concat(announced, started.value.output).pipe(
          Stream.ensuring(Scope.close(scope, Exit.void))
        )
        return HttpServerResponse.stream(output, options)
      })

    yield* router.add("*", `${gitPathPrefix}*`, handle)
  })
)
