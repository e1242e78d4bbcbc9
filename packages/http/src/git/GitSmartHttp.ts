import { NodeHttpServerRequest, NodeStream } from "@effect/platform-node"
import { Git, type Kernel } from "@hostplane/core"
import { Cause, Effect, Exit, Option, Scope, Stream } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Readable } from "node:stream"
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
        const body = request.stream
        const input: Stream.Stream<Uint8Array, unknown> =
          mode === "advertise"
            ? Stream.empty
            : encoding === "gzip" || encoding === "x-gzip"
              ? NodeStream.pipeThroughDuplex(body, { evaluate: () => Zlib.createGunzip(), onError: (cause) => cause })
              : body
        // The git process lives as long as its response stream, not as long as this handler.
        const scope = yield* Scope.make()
        const started = yield* Effect.exit(
          Scope.provide(
            repos.serve(
              granted.success,
              { service: service === "git-receive-pack" ? "receive-pack" : "upload-pack", mode, protocol },
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
