import { NodeHttpServer } from "@effect/platform-node"
// The unbundled modules: the package's main entry is one bundle with its own copy of core's errors.
import { makeClientFor, makeFor } from "@hostplane/client/ClientOf"
import { type Client, ClientApi } from "@hostplane/client/HostplaneClient"
import type { PromiseClient } from "@hostplane/client/PromiseClient"
import { Identity, type services } from "@hostplane/core"
import { Context, Effect, Exit, Layer, Schema, Scope } from "effect"
import { FetchHttpClient, HttpEffect, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import type * as Http from "node:http"
import { app, type Ports, routerLayer } from "../App.ts"
import { HostActor, HostIdentity } from "../auth/HostAuthenticator.ts"
import { MountPrefix } from "../console/ConsolePages.ts"
import { explainMissingPort } from "./MissingPort.ts"

/** What the served layer gives besides the routes: every core service and the registry. */
type Services = Layer.Success<typeof services>

/** The host's Node (Connect, Express) middleware signature: `next` passes a request hostplane does not serve on. */
export type NodeMiddleware = (
  request: Http.IncomingMessage,
  response: Http.ServerResponse,
  next?: (error?: unknown) => void
) => void

/** hostplane mounted in a host: the same routes and services behind every entry point. */
export interface Mounted<R> {
  /** The path prefix everything is served under (`""`: the root), as given, without a trailing slash. */
  readonly prefix: string
  /**
   * A `node:http` listener and Connect/Express middleware: a request under the prefix is answered (the prefix cut
   * off before routing), any other goes to `next` when there is one, else is 404. Mount it before a body parser.
   */
  readonly listener: NodeMiddleware
  /** The same as a web-standard handler (Hono, Bun, Deno, route handlers of Next.js). */
  readonly handler: (request: Request) => Promise<Response>
  /**
   * The typed client (Promise) of the whole API acting as the user of a host identity (created on first sight, as
   * the host's authenticator would), with no socket: each call runs through the same routes, rules, audit and errors
   * in this process.
   */
  readonly asUser: (identity: HostIdentity) => PromiseClient
  /** The same typed client for Effect code (`HttpApiClient`): its failures are core's tagged errors. */
  readonly asUserEffect: (identity: HostIdentity) => Client
  /** The services built, for host code in Effect that calls them directly. */
  readonly context: Context.Context<R>
  /** Releases everything built (database pools, background runners). */
  readonly dispose: () => Promise<void>
}

const prefixPattern = /^(\/[A-Za-z0-9._~!$&'()*+,;=:@-]+)*$/

/** `/platform/` becomes `/platform`; anything but path segments (a query, `..`, `//`) is refused by name. */
export const normalizePrefix = (prefix: string): string => {
  const trimmed = prefix.endsWith("/") ? prefix.slice(0, -1) : prefix
  const segments = trimmed.split("/").slice(1)
  if (!prefixPattern.test(trimmed) || segments.some((segment) => segment === "." || segment === "..")) {
    throw new Error(`prefix must be a path such as /platform (got ${JSON.stringify(prefix)})`)
  }
  return trimmed
}

/** The URL under the prefix (`/platform/v1/me` under `/platform` is `/v1/me`), or undefined outside it. */
export const underPrefix = (prefix: string, url: string): string | undefined => {
  if (prefix === "") return url
  if (!url.startsWith(prefix)) return undefined
  const rest = url.slice(prefix.length)
  if (rest === "") return "/"
  if (rest.startsWith("/")) return rest
  if (rest.startsWith("?")) return `/${rest}`
  return undefined
}

const inProcessOrigin = "http://hostplane.in-process"

/**
 * Builds hostplane and mounts it in a host: a Node listener and a web-standard handler under `prefix`, and the typed
 * client acting as a user in process. `ports` provides the stores, the settings, the adapters and the host's
 * authenticator (`HostAuthenticator.off` for none); `served` is `app` or `appWith(...)` for more areas.
 */
export const mount = async <E>(
  ports: Layer.Layer<Ports, E>,
  options: {
    readonly prefix?: string | undefined
    readonly served?: Layer.Layer<Services, unknown, Ports | HttpRouter.HttpRouter> | undefined
  } = {}
): Promise<Mounted<Ports | Services>> => {
  const prefix = normalizePrefix(options.prefix ?? "")
  const scope = Effect.runSync(Scope.make())
  const layer = (options.served ?? app).pipe(
    Layer.provide(Layer.succeed(MountPrefix)(prefix)),
    Layer.provideMerge(routerLayer),
    Layer.provideMerge(ports),
    Layer.provideMerge(NodeHttpServer.layerHttpServices)
  )
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope)).catch(async (error: unknown) => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw explainMissingPort(error)
  })
  const routed = Context.get(context, HttpRouter.HttpRouter).asHttpEffect() as Effect.Effect<
    HttpServerResponse.HttpServerResponse,
    unknown,
    HttpServerRequest.HttpServerRequest | Scope.Scope
  >
  const notMounted = Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
    HttpServerResponse.jsonUnsafe(
      { code: "not_found", message: `no route for ${request.method} ${request.url.split("?")[0]}` },
      { status: 404 }
    )
  )
  const prefixed: typeof routed =
    prefix === ""
      ? routed
      : Effect.flatMap(HttpServerRequest.HttpServerRequest, (request): typeof routed => {
          const url = underPrefix(prefix, request.url)
          return url === undefined
            ? notMounted
            : Effect.provideService(routed, HttpServerRequest.HttpServerRequest, request.modify({ url }))
        })
  const nodeListener = await Effect.runPromise(
    NodeHttpServer.makeHandler(prefixed, { scope }).pipe(Effect.provideContext(context))
  )
  const listener: NodeMiddleware = (request, response, next) => {
    if (next !== undefined && underPrefix(prefix, request.url ?? "/") === undefined) return next()
    nodeListener(request, response)
  }
  const handler = HttpEffect.toWebHandlerWith<Ports | Services, HttpServerRequest.HttpServerRequest | Scope.Scope>(
    context
  )(prefixed) as (request: Request) => Promise<Response>

  // In-process calls: the request never leaves this process, and the user rides in the request's context (a value no
  // header can forge), where the pipeline reads the host's sign-in.
  const inProcess = HttpEffect.toWebHandlerWith<Ports | Services, HttpServerRequest.HttpServerRequest | Scope.Scope>(
    context
  )(routed) as (request: Request, context: Context.Context<never>) => Promise<Response>
  const identity = Context.get(context, Identity.Identity)
  const fetchAs = (who: HostIdentity): typeof globalThis.fetch => {
    const decoded = Schema.decodeUnknownSync(HostIdentity)(who)
    const actor = identity.actorOf({
      provider: decoded.provider,
      subject: decoded.subject,
      email: decoded.email ?? null,
      name: decoded.name ?? null
    })
    const asActor = Context.make(HostActor, actor) as Context.Context<never>
    return (input, init) => inProcess(new Request(input, init), asActor)
  }
  return {
    prefix,
    listener,
    handler,
    asUser: (who) => makeClientFor(ClientApi, { baseUrl: inProcessOrigin, fetch: fetchAs(who) }),
    asUserEffect: (who) =>
      Effect.runSync(
        makeFor(ClientApi, { baseUrl: inProcessOrigin, fetch: fetchAs(who) }).pipe(
          Effect.provide(FetchHttpClient.layer)
        )
      ) as Client,
    context,
    dispose: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}
