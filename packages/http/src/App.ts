import { type Deployments, Identity, Kernel, type Ports as CorePorts, services } from "@hostplane/core"
import { Effect, Layer } from "effect"
import type { NonEmptyReadonlyArray } from "effect/Array"
import { HttpMiddleware, HttpRouter } from "effect/http"
import { type HttpApi, HttpApiBuilder, type HttpApiEndpoint, type HttpApiGroup } from "effect/http-api"
import { apiOf } from "./Api.ts"
import { type AnyAreaHttp, apiPrefix, type HandlersOf } from "./Area.ts"
import { areas } from "./areas.ts"
import { ruleOf } from "@hostplane/api/auth/Rules"
import { AuthenticationLive } from "./auth/Authentication.ts"
import { type HostAuthenticator, hostActorResolver } from "./auth/HostAuthenticator.ts"
import { consolePages } from "./console/ConsolePages.ts"
import { cachedMe, cachedMePath } from "./identity/CachedMe.ts"
import { DevAuthApi } from "@hostplane/api/identity/IdentityApi"
import { invitePage, invitePagePath } from "./orgs/InvitePage.ts"
import { apiDocs } from "./server/ApiDocs.ts"
import { apiIndex } from "./server/ApiIndex.ts"
import { documentAnnotations } from "@hostplane/api/server/OpenApiDocument"
import { type KnownRoute, requestPipeline, routePattern } from "./server/RequestPipeline.ts"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyApi = HttpApi.HttpApi<string, any>

const knownRoutes = (api: AnyApi): ReadonlyArray<KnownRoute> => [
  { method: "GET", template: "/v1/openapi.json", pattern: routePattern("/v1/openapi.json") },
  { method: "GET", template: "/v1/docs", pattern: routePattern("/v1/docs") },
  { method: "GET", template: "/v1", pattern: routePattern("/v1") },
  { method: "GET", template: invitePagePath, pattern: routePattern(invitePagePath) },
  ...Object.values(api.groups as Record<string, HttpApiGroup.Constraint>).flatMap((group) =>
    Object.values(group.endpoints as Record<string, HttpApiEndpoint.Top>).map((endpoint) => ({
      method: endpoint.method,
      template: endpoint.path,
      pattern: routePattern(endpoint.path),
      ruled: ruleOf(endpoint) !== undefined
    }))
  )
]

/**
 * Names each request's span by its route (`GET /v1/orgs/:org`; a path outside the API keeps the bare method), as
 * OpenTelemetry's conventions name server spans: a span per raw path would be a name per resource id. The routes are
 * those of every area with the dev login, a superset of what any one server answers.
 */
export const spanNames = Layer.sync(HttpMiddleware.SpanNameGenerator, () => {
  const byMethod = new Map<string, Array<KnownRoute>>()
  for (const route of knownRoutes(apiOf(areas).add(DevAuthApi.prefix(apiPrefix)))) {
    byMethod.set(route.method, [...(byMethod.get(route.method) ?? []), route])
  }
  return (request) => {
    const path = request.url.split("?")[0] ?? "/"
    const route = byMethod.get(request.method)?.find((known) => known.pattern.test(path))
    return route === undefined ? request.method : `${request.method} ${route.template}`
  }
})

/** What the routes of a list of areas need: the router, the settings and the services their handlers use. */
export type RoutesNeeds<As extends ReadonlyArray<AnyAreaHttp>> =
  | HttpRouter.HttpRouter
  | Kernel.Settings
  | Identity.IdentityConfig
  | HostAuthenticator
  | Layer.Services<typeof AuthenticationLive>
  | Exclude<Layer.Services<HandlersOf<As[number]>>, Layer.Success<typeof AuthenticationLive>>

/**
 * The `/v1` routes of a list of areas on an `HttpRouter`: the API (with the dev login only when `IdentityConfig.devAuth`
 * is on), `/v1/openapi.json`, `/v1/docs`, and the pipeline that gives every response the envelope and a request id.
 */
export const routesOf = <const As extends NonEmptyReadonlyArray<AnyAreaHttp>>(
  areas: As
): Layer.Layer<never, never, RoutesNeeds<As>> => {
  const production: AnyApi = apiOf(areas)
  const development: AnyApi = apiOf(areas).add(DevAuthApi.prefix(apiPrefix))
  const handlers = Layer.mergeAll(...(areas.map((area) => area.handlers) as [AnyAreaHttp["handlers"]])).pipe(
    Layer.provide(AuthenticationLive)
  )
  return Layer.unwrap(
    Effect.gen(function* () {
      const settings = yield* Kernel.Settings
      const { devAuth } = yield* Identity.IdentityConfig
      const api = devAuth ? development : production
      // The document names this deployment's URL as its server.
      const documented = api.annotateMerge(documentAnnotations(settings.publicUrl))
      return Layer.mergeAll(
        HttpApiBuilder.layer(documented, { openapiPath: "/v1/openapi.json" }),
        apiDocs(documented, "/v1/docs"),
        apiIndex,
        invitePage,
        consolePages,
        requestPipeline(knownRoutes(api), {
          shortcuts: Effect.map(cachedMe, (answer) => new Map([[cachedMePath, answer]])),
          hostActor: hostActorResolver
        })
      ).pipe(Layer.provide(handlers))
    })
  ) as Layer.Layer<never, never, any>
}

/** The routes of every area of this package. */
export const routes = routesOf(areas)

/**
 * The ports the routes need from the host, as every area declares them: the stores, the settings, the DNS that
 * hostname verification asks, the secret sealer (`SealerAesGcm`), the access password hasher (`PasswordHasherScrypt`),
 * the bundle reader and artifact store (`BundleReader` over `ArtifactStoreDisk`), all in adapters-providers, and the
 * host's own sign-in (`HostAuthenticator`, or `HostAuthenticator.off`). The node API serves bundles from the artifact
 * store (`GET /v1/node/artifacts/{digest}`).
 */
export type Ports = CorePorts | Deployments.ArtifactStore | HostAuthenticator

/**
 * Router settings every host of `app` should use: path parameters up to 1024 characters, so a 128-character secret
 * name or a 253-character hostname reaches its handler (and its 400 rules) instead of the router's default limit of 100.
 */
export const routerConfig = { maxParamLength: 1024 } as const

/** The `HttpRouter` built with `routerConfig`. */
export const routerLayer = HttpRouter.layer.pipe(Layer.provide(Layer.succeed(HttpRouter.RouterConfig)(routerConfig)))

/**
 * Routes with the core services built in; the host provides `Ports` (each provider real or in its `off` form). The
 * services stay in the output so the edge listener built beside the API shares them.
 */
export const app = routes.pipe(Layer.provideMerge(services))

/**
 * The routes of `httpAreas` on the services of `core` (`servicesWith(...)` for extra core areas): how a host or a
 * test adds its own areas to both.
 */
export const appWith = <const As extends NonEmptyReadonlyArray<AnyAreaHttp>, Out, E, In>(
  httpAreas: As,
  core: Layer.Layer<Out, E, In>
) => routesOf(httpAreas).pipe(Layer.provideMerge(core))
