import { Clock, Context, Data, Duration, Effect, Layer, Option } from "effect"
import { type EdgePass, EdgePasses } from "@hostplane/core/edge/EdgePasses"
import type { StoredFile } from "@hostplane/core/deployments/ArtifactStore"
import { Settings } from "@hostplane/core/kernel/Settings"
import { safeNextPath } from "@hostplane/core/access/AccessRules"
import { assetCandidates, contentTypeOf } from "./AssetPath.ts"
import type { DeploymentId, OrgId, ProjectId } from "@hostplane/core/kernel/Ids"
import type { ArtifactStoreUnavailable } from "@hostplane/core/errors/Errors"
import type { Manifest } from "@hostplane/core/deployments/Manifest"
import { EdgeView, type LiveDeployment } from "./EdgeCache.ts"
import { Result } from "effect"

/**
 * The cookie carrying a visitor's pass on a protected deployment's host. The `__Host-` prefix makes browsers take it
 * only when Secure, for `Path=/` and without `Domain`, so a sibling host under the app domain cannot plant one.
 */
export const accessCookie = "__Host-service_access"

/** What the edge was asked, reduced to what its rules look at. */
export interface EdgeRequest {
  readonly host: string
  readonly method: string
  /** Path and query as sent (`/docs/?x=1`). */
  readonly url: string
  readonly bypass?: string | undefined
  /** The value of the access cookie, if any. */
  readonly session?: string | undefined
  readonly ifNoneMatch?: string | undefined
  /** Whether the client prefers HTML (a browser), for pages instead of JSON errors. */
  readonly wantsHtml: boolean
  /** The fields of a posted form (`/__service/access/password`). */
  readonly form?: Readonly<Record<string, string>> | undefined
  /** Who is asking (the remote address), for limiting password attempts per client. */
  readonly client?: string | undefined
  /** Every cookie the visitor sent (the auth worker reads its own). */
  readonly cookies?: Readonly<Record<string, string>> | undefined
}

/** A cookie an answer sets (host-only, `Path=/`, Secure, HttpOnly, SameSite=Lax); `maxAge` 0 removes it. */
export interface EdgeCookie {
  readonly name: string
  readonly value: string
  readonly maxAge: number
}

export type EdgeAnswer =
  | {
      readonly _tag: "File"
      readonly status: 200 | 404
      readonly file: StoredFile
      /** The file's bytes when they are held in memory (a small file): sent as they are, without a stream. */
      readonly body?: Uint8Array | undefined
      readonly contentType: string
      readonly etag: string
      /** HEAD: headers only. */
      readonly bodyless: boolean
      /** Served under an access policy: the answer depends on the visitor's cookie and no shared cache may keep it. */
      readonly private: boolean
    }
  | { readonly _tag: "NotModified"; readonly etag: string; readonly private: boolean }
  | {
      readonly _tag: "Redirect"
      readonly location: string
      readonly setSession?: { readonly value: string; readonly maxAge: number }
      readonly cookies?: ReadonlyArray<EdgeCookie>
    }
  | {
      readonly _tag: "Json"
      readonly status: number
      readonly body: unknown
      readonly cookies?: ReadonlyArray<EdgeCookie>
    }
  | {
      readonly _tag: "Problem"
      readonly status: number
      readonly code: string
      readonly message: string
      /** Seconds to wait before trying again (429). */
      readonly retryAfter?: number
    }
  | { readonly _tag: "Page"; readonly status: number; readonly html: string; readonly retryAfter?: number }
  | ({ readonly _tag: "Worker" } & WorkerTarget)

/** A request the live deployment's worker answers (decisions.md part 13), once the access policy admitted it. */
export interface WorkerTarget {
  readonly projectId: ProjectId
  readonly deploymentId: DeploymentId
  readonly digest: string
  readonly manifest: Manifest
  /** The entry module's path in the bundle (`worker/index.js`). */
  readonly entry: string
  /** Served under an access policy. */
  readonly private: boolean
}

/**
 * What answers `/__service/auth/*` on a project's hosts before the deployment does: the end-user sign-in worker (spec
 * 4.9), which answers none where the auth add-on is not granted, so the path goes on to the deployment.
 */
export class EdgeSignIn extends Context.Service<
  EdgeSignIn,
  {
    readonly handle: (request: EdgeRequest, projectId: ProjectId, url: URL) => Effect.Effect<Option.Option<EdgeAnswer>>
  }
>()("@hostplane/node/edge/EdgeSignIn") {
  /** No sign-in routes: every `/__service/auth/*` path is the deployment's. */
  static readonly none: Layer.Layer<EdgeSignIn> = Layer.succeed(EdgeSignIn)({
    handle: () => Effect.succeed(Option.none())
  })
}

/** Whether an `If-None-Match` header names `etag` (a file's 200 then becomes a 304). */
export const etagMatches = (ifNoneMatch: string | undefined, etag: string): boolean =>
  ifNoneMatch !== undefined && ifNoneMatch.split(/\s*,\s*/).includes(etag)

const problem = (status: number, code: string, message: string): EdgeAnswer => ({
  _tag: "Problem",
  status,
  code,
  message
})

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!)

const page = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escapeHtml(title)}</title></head><body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`

const passwordPage = (next: string, failed: boolean) =>
  page(
    "This deployment is protected",
    `${failed ? "<p>That password is not right.</p>" : ""}<form method="post" action="/__service/access/password">` +
      `<input type="hidden" name="next" value="${escapeHtml(next)}">` +
      `<label>Password <input type="password" name="password" autofocus required></label> <button>Open</button></form>`
  )

/** Password attempts one client may make at one host per window; more are 429 until the window ends. */
export const passwordAttempts = { limit: 10, window: Duration.minutes(1) } as const

/**
 * Counts password attempts per client and host in fixed windows, in this process's memory (each replica counts its
 * own). Answers the seconds to wait when the attempt is over the limit, else counts it.
 */
const attemptLimiter = () => {
  const windows = new Map<string, { count: number; endsAt: number }>()
  const windowMs = Duration.toMillis(passwordAttempts.window)
  return (key: string, now: number): number | undefined => {
    if (windows.size > 10_000) for (const [k, w] of windows) if (w.endsAt <= now) windows.delete(k)
    const current = windows.get(key)
    if (current === undefined || current.endsAt <= now) {
      windows.set(key, { count: 1, endsAt: now + windowMs })
      return undefined
    }
    if (current.count >= passwordAttempts.limit) return Math.max(1, Math.ceil((current.endsAt - now) / 1000))
    current.count += 1
    return undefined
  }
}

/** The control plane that checks and issues passes cannot be reached: the visitor gets a 503 it may retry. */
export class AccessUnavailable extends Data.TaggedError("AccessUnavailable")<{ readonly message: string }> {}

/** The answer that hands a visitor a pass: the cookie, then on to `next`. */
export const passAnswer = (pass: EdgePass, next: string): EdgeAnswer => ({
  _tag: "Redirect",
  location: next,
  setSession: { value: pass.value, maxAge: pass.maxAge }
})

const accessUnavailable = (error: AccessUnavailable): EdgeAnswer => problem(503, "access_unavailable", error.message)

/**
 * Who a protected deployment admits, and the passes that admit them (spec 4.11): the bypass header, a pass from a
 * one-time authorize code (org members), or one from the shared password. The passes are the control plane's
 * (`EdgePasses`): in process on its own edge, over the node API on a node on another machine, which fails with
 * `AccessUnavailable` while the control plane does not answer.
 */
export class EdgeAccess extends Context.Service<
  EdgeAccess,
  {
    /** Whether the bypass header or the visitor's pass admits them under `mode` today. */
    readonly admits: (
      request: EdgeRequest,
      projectId: ProjectId,
      orgId: OrgId,
      mode: string
    ) => Effect.Effect<boolean, AccessUnavailable>
    /** `/__service/access/callback`: an authorize code exchanged for a pass, then on to `next`. */
    readonly callback: (host: string, code: string, next: string) => Effect.Effect<EdgeAnswer, AccessUnavailable>
    /** `/__service/access/password`: a pass when the password is right (none when it is not). */
    readonly password: (
      host: string,
      projectId: ProjectId,
      password: string,
      next: string
    ) => Effect.Effect<Option.Option<EdgeAnswer>, AccessUnavailable>
  }
>()("@hostplane/node/edge/EdgeAccess") {
  /** On the control plane's own passes, in this process. */
  static readonly layer = Layer.effect(
    EdgeAccess,
    Effect.map(Effect.service(EdgePasses), (passes) =>
      EdgeAccess.of({
        admits: (request, projectId, orgId, mode) =>
          passes.admits({ host: request.host, bypass: request.bypass, pass: request.session }, projectId, orgId, mode),
        callback: (host, code, next) =>
          passes.exchange(host, code).pipe(
            Effect.map((pass) => passAnswer(pass, next)),
            Effect.catchTag("Forbidden", (error) => Effect.succeed(problem(403, "forbidden", error.message)))
          ),
        password: (host, projectId, password, next) =>
          Effect.map(
            passes.password(host, projectId, password),
            Option.map((pass) => passAnswer(pass, next))
          )
      })
    )
  )
}

/**
 * The reference edge's rules (spec 3 and 4.11): routes a verified hostname to its project's live deployment, serves
 * the bundle's `assets/`, and admits visitors by policy: anyone (`public`), org members with a pass from a one-time
 * authorize code (`org`), holders of the shared password (`password`), or the bypass header in any mode.
 * Every other path goes to the live deployment's worker when it has one (a `Worker` answer the host's runtime runs).
 */
export class Edge extends Context.Service<
  Edge,
  {
    readonly handle: (request: EdgeRequest) => Effect.Effect<EdgeAnswer>
    /**
     * A count that rises whenever a host, project, policy or deployment the edge holds may have changed: a `Worker`
     * answer for a public deployment, worked out while it was `n`, is the answer to the same host, method kind and path
     * while it is still `n`. `undefined` while the edge holds nothing (every answer is read afresh).
     */
    readonly generation: () => number | undefined
  }
>()("@hostplane/node/edge/Edge") {
  static readonly layer = Layer.effect(
    Edge,
    Effect.gen(function* () {
      const access = yield* EdgeAccess
      const settings = yield* Settings
      const passwordAttempt = attemptLimiter()
      const cache = yield* EdgeView
      // With the end-user ports off the sign-in worker answers 503 `auth_unavailable`.
      const signInRoutes = yield* EdgeSignIn

      const system = Effect.fnUntraced(function* (request: EdgeRequest, path: string, query: URLSearchParams) {
        const next = query.get("next") ?? request.form?.["next"] ?? "/"
        const safeNext = safeNextPath(next) ? next : "/"
        if (path === "/__service/health") return problem(200, "ok", "ok")
        if (path === "/__service/access/callback" && request.method === "GET") {
          return yield* access
            .callback(request.host, query.get("code") ?? "", safeNext)
            .pipe(Effect.catchTag("AccessUnavailable", (error) => Effect.succeed(accessUnavailable(error))))
        }
        if (path === "/__service/access/password" && request.method === "POST") {
          const route = yield* cache.route(request.host)
          if (Option.isNone(route)) return problem(404, "unknown_hostname", `${request.host} is not connected`)
          const wait = passwordAttempt(`${request.client ?? ""} ${request.host}`, yield* Clock.currentTimeMillis)
          if (wait !== undefined) {
            return request.wantsHtml
              ? ({
                  _tag: "Page",
                  status: 429,
                  retryAfter: wait,
                  html: page("Too many attempts", `<p>Wait ${wait} seconds, then try the password again.</p>`)
                } satisfies EdgeAnswer)
              : { ...problem(429, "rate_limited", "too many password attempts: try again later"), retryAfter: wait }
          }
          const pass = yield* Effect.result(
            access.password(request.host, route.value.projectId, request.form?.["password"] ?? "", safeNext)
          )
          if (Result.isFailure(pass)) return accessUnavailable(pass.failure)
          return Option.isSome(pass.success)
            ? pass.success.value
            : ({ _tag: "Page", status: 401, html: passwordPage(safeNext, true) } satisfies EdgeAnswer)
        }
        return problem(404, "not_found", `no system route ${path}`)
      })

      /** The bucket is down or lost an object: an answer the visitor can retry, and a line for the operator. */
      const storeFailed = (error: ArtifactStoreUnavailable) =>
        Effect.as(
          Effect.logError("edge: the artifact store failed", { message: error.message }),
          problem(503, "artifact_store_unavailable", "this deployment's files cannot be read right now")
        )

      const serve = Effect.fnUntraced(function* (
        request: EdgeRequest,
        projectId: ProjectId,
        live: LiveDeployment | undefined,
        path: string,
        isPrivate: boolean
      ) {
        if (live === undefined) return problem(404, "not_found", "nothing is deployed here yet")
        const digest = live.deployment.digest
        const entry = live.entry
        const worker: EdgeAnswer | undefined =
          entry === null
            ? undefined
            : {
                _tag: "Worker",
                projectId,
                deploymentId: live.deployment.id,
                digest,
                manifest: live.deployment.manifest,
                entry,
                private: isPrivate
              }
        if (
          worker !== undefined &&
          (live.deployment.manifest.workerFirst === true || (request.method !== "GET" && request.method !== "HEAD"))
        ) {
          return worker
        }
        const etag = `"${digest.slice("sha256:".length)}"`
        const candidates = assetCandidates(path)
        if (candidates === undefined) return worker ?? problem(400, "bad_request", "this path cannot name a file")
        for (const candidate of candidates) {
          const file = yield* cache.file(digest, candidate)
          if (Option.isSome(file)) {
            if (etagMatches(request.ifNoneMatch, etag)) {
              return { _tag: "NotModified", etag, private: isPrivate } satisfies EdgeAnswer
            }
            return {
              _tag: "File",
              status: 200,
              file: file.value,
              body: file.value.body,
              contentType: contentTypeOf(candidate),
              etag,
              bodyless: request.method === "HEAD",
              private: isPrivate
            } satisfies EdgeAnswer
          }
        }
        if (worker !== undefined) return worker
        const notFoundPage = yield* cache.file(digest, "assets/404.html")
        if (Option.isSome(notFoundPage)) {
          return {
            _tag: "File",
            status: 404,
            file: notFoundPage.value,
            body: notFoundPage.value.body,
            contentType: contentTypeOf("404.html"),
            etag,
            bodyless: request.method === "HEAD",
            private: isPrivate
          } satisfies EdgeAnswer
        }
        return problem(404, "not_found", `no file for ${path}`)
      })

      const handle = Effect.fn("Edge.handle")(function* (request: EdgeRequest) {
        const url = new URL(request.url, "http://edge.invalid")
        const signIn = url.pathname.startsWith("/__service/auth/")
        if (url.pathname.startsWith("/__service/") && !signIn) {
          return yield* system(request, url.pathname, url.searchParams)
        }
        const route = yield* cache.route(request.host)
        if (Option.isNone(route)) return problem(404, "unknown_hostname", `${request.host} is not connected`)
        if (signIn) {
          // The auth worker answers on a granted project's hosts; otherwise the path is the deployment's.
          const answer = yield* signInRoutes.handle(request, route.value.projectId, url)
          if (Option.isSome(answer)) return answer.value
        }
        const { projectId, orgId } = route.value
        const found = yield* Effect.result(cache.project(projectId))
        if (Result.isFailure(found)) return yield* storeFailed(found.failure)
        const { live, policy } = found.success
        if ((live === undefined || live.entry === null) && request.method !== "GET" && request.method !== "HEAD") {
          return problem(405, "method_not_allowed", "this deployment serves static assets: GET and HEAD only")
        }
        const checked =
          policy.mode === "public"
            ? Result.succeed(true)
            : yield* Effect.result(access.admits(request, projectId, orgId, policy.mode))
        if (Result.isFailure(checked)) return accessUnavailable(checked.failure)
        const admitted = checked.success
        if (!admitted) {
          const next = `${url.pathname}${url.search}`
          if (policy.mode === "password") {
            return request.wantsHtml
              ? ({ _tag: "Page", status: 401, html: passwordPage(next, false) } satisfies EdgeAnswer)
              : problem(401, "unauthorized", "this deployment needs its password")
          }
          const dashboard = escapeHtml(settings.publicUrl)
          return request.wantsHtml
            ? ({
                _tag: "Page",
                status: 401,
                html: page(
                  "This deployment is private",
                  `<p>It is open to members of its organization. Sign in at <a href="${dashboard}">${dashboard}</a> and open it from there.</p>`
                )
              } satisfies EdgeAnswer)
            : problem(401, "unauthorized", "this deployment is open to members of its organization")
        }
        return yield* serve(request, projectId, live, url.pathname, policy.mode !== "public").pipe(
          Effect.catchTag("ArtifactStoreUnavailable", storeFailed)
        )
      })

      return Edge.of({ handle, generation: cache.generation })
    })
  )
}
