import {
  type Access,
  type Configs,
  type Deployments,
  type Hostnames,
  Identity,
  Kernel,
  type Secrets,
  services,
  type Stores
} from "@hostplane/core"
import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { AccessHandlers } from "./access/AccessHandlers.ts"
import { Api, ApiWithDevAuth } from "./Api.ts"
import { AuthenticationLive } from "./auth/Authentication.ts"
import { DeploymentsHandlers } from "./deployments/DeploymentsHandlers.ts"
import { DevAuthHandlers, IdentityHandlers } from "./identity/IdentityHandlers.ts"
import { HostnamesHandlers } from "./hostnames/HostnamesHandlers.ts"
import { InvitesHandlers, MembersHandlers, OrgsHandlers } from "./orgs/OrgsHandlers.ts"
import { ProjectsHandlers } from "./projects/ProjectsHandlers.ts"
import { SecretsHandlers } from "./secrets/SecretsHandlers.ts"
import { invitePage, invitePagePath } from "./orgs/InvitePage.ts"
import { apiIndex } from "./server/ApiIndex.ts"
import { documentAnnotations } from "./server/OpenApiDocument.ts"
import { type KnownRoute, requestPipeline, routePattern } from "./server/RequestPipeline.ts"

const knownRoutes = (api: typeof Api | typeof ApiWithDevAuth): ReadonlyArray<KnownRoute> => [
  { method: "GET", template: "/v1/openapi.json", pattern: routePattern("/v1/openapi.json") },
  { method: "GET", template: "/v1/docs", pattern: routePattern("/v1/docs") },
  { method: "GET", template: "/v1", pattern: routePattern("/v1") },
  { method: "GET", template: invitePagePath, pattern: routePattern(invitePagePath) },
  ...Object.values(api.groups).flatMap((group) =>
    Object.values(group.endpoints).map((endpoint) => ({
      method: endpoint.method,
      template: endpoint.path,
      pattern: routePattern(endpoint.path)
    }))
  )
]

const handlers = Layer.mergeAll(
  IdentityHandlers,
  DevAuthHandlers,
  OrgsHandlers,
  MembersHandlers,
  InvitesHandlers,
  ProjectsHandlers,
  DeploymentsHandlers,
  SecretsHandlers,
  AccessHandlers,
  HostnamesHandlers
).pipe(Layer.provide(AuthenticationLive))

/**
 * The `/v1` routes on an `HttpRouter`: the API (with the dev login only when `IdentityConfig.devAuth` is on),
 * `/v1/openapi.json`, `/v1/docs`, and the pipeline that gives every response the envelope and a request id.
 */
export const routes = Layer.unwrap(
  Effect.gen(function* () {
    const settings = yield* Kernel.Settings
    const { devAuth } = yield* Identity.IdentityConfig
    // The document names this deployment's URL as its server.
    const document = documentAnnotations(settings.publicUrl)
    const api = devAuth
      ? Layer.merge(
          HttpApiBuilder.layer(ApiWithDevAuth.annotateMerge(document), { openapiPath: "/v1/openapi.json" }),
          HttpApiScalar.layer(ApiWithDevAuth.annotateMerge(document), { path: "/v1/docs" })
        )
      : Layer.merge(
          HttpApiBuilder.layer(Api.annotateMerge(document), { openapiPath: "/v1/openapi.json" }),
          HttpApiScalar.layer(Api.annotateMerge(document), { path: "/v1/docs" })
        )
    return Layer.mergeAll(api, apiIndex, invitePage, requestPipeline(knownRoutes(devAuth ? ApiWithDevAuth : Api))).pipe(
      Layer.provide(handlers)
    )
  })
)

/**
 * The ports the routes need from the host: the stores, the settings, the DNS that hostname verification asks, the
 * secret sealer, the access password hasher and the bundle reader.
 */
export type Ports =
  | Stores
  | Configs
  | Hostnames.DnsResolver
  | Hostnames.HostedZones
  /** Seals project secrets at rest (`SealerAesGcm` in adapters-providers). */
  | Secrets.Sealer
  /** Hashes the project access password (`PasswordHasherScrypt` in adapters-providers). */
  | Access.PasswordHasher
  /** Reads uploaded bundles into the artifact store (`BundleReader` over `ArtifactStoreDisk` in adapters-providers). */
  | Deployments.BundleReader
  /** Serves bundle files to the edge (`ArtifactStoreDisk`). */
  | Deployments.ArtifactStore

/**
 * Router settings every host of `app` should use: path parameters up to 1024 characters, so a 128-character secret
 * name or a 253-character hostname reaches its handler (and its 400 rules) instead of the router's default limit of 100.
 */
export const routerConfig = { maxParamLength: 1024 } as const

/** The `HttpRouter` built with `routerConfig`. */
export const routerLayer = HttpRouter.layer.pipe(Layer.provide(Layer.succeed(HttpRouter.RouterConfig)(routerConfig)))

/**
 * Routes with the core services built in; the host provides `Ports` (and optionally an `IdentityProvider`). The
 * services stay in the output so the edge listener built beside the API shares them.
 */
export const app = routes.pipe(Layer.provideMerge(services))
