import { type Hostnames, Kernel, services, type Stores } from "@hostplane/core"
import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { Api, ApiWithDevAuth } from "./Api.ts"
import { AuthenticationLive } from "./auth/Authentication.ts"
import { DevAuthHandlers, IdentityHandlers } from "./identity/IdentityHandlers.ts"
import { HostnamesHandlers } from "./hostnames/HostnamesHandlers.ts"
import { InvitesHandlers, MembersHandlers, OrgsHandlers } from "./orgs/OrgsHandlers.ts"
import { ProjectsHandlers } from "./projects/ProjectsHandlers.ts"
import { type KnownRoute, requestPipeline, routePattern } from "./server/RequestPipeline.ts"

const knownRoutes = (api: typeof Api | typeof ApiWithDevAuth): ReadonlyArray<KnownRoute> => [
  { method: "GET", pattern: routePattern("/v1/openapi.json") },
  { method: "GET", pattern: routePattern("/v1/docs") },
  ...Object.values(api.groups).flatMap((group) =>
    Object.values(group.endpoints).map((endpoint) => ({ method: endpoint.method, pattern: routePattern(endpoint.path) }))
  )
]

const handlers = Layer.mergeAll(
  IdentityHandlers,
  DevAuthHandlers,
  OrgsHandlers,
  MembersHandlers,
  InvitesHandlers,
  ProjectsHandlers,
  HostnamesHandlers
).pipe(
  Layer.provide(AuthenticationLive)
)

/**
 * The `/v1` routes on an `HttpRouter`: the API (with the dev login only when `Settings.devAuth` is on),
 * `/v1/openapi.json`, `/v1/docs`, and the pipeline that gives every response the envelope and a request id.
 */
export const routes = Layer.unwrap(
  Effect.gen(function* () {
    const settings = yield* Kernel.Settings
    const api = settings.devAuth
      ? Layer.merge(
          HttpApiBuilder.layer(ApiWithDevAuth, { openapiPath: "/v1/openapi.json" }),
          HttpApiScalar.layer(ApiWithDevAuth, { path: "/v1/docs" })
        )
      : Layer.merge(
          HttpApiBuilder.layer(Api, { openapiPath: "/v1/openapi.json" }),
          HttpApiScalar.layer(Api, { path: "/v1/docs" })
        )
    return Layer.mergeAll(api, requestPipeline(knownRoutes(settings.devAuth ? ApiWithDevAuth : Api))).pipe(
      Layer.provide(handlers)
    )
  })
)

/** The ports the routes need from the host: the stores, the settings and the DNS that hostname verification asks. */
export type Ports = Stores | Kernel.Settings | Hostnames.DnsResolver | Hostnames.HostedZones

/** Routes with the core services built in; the host provides `Ports` (and optionally an `IdentityProvider`). */
export const app = routes.pipe(Layer.provide(services))
