import { type AddonGroup, addonGroup, type AddonGroupOptions } from "@hostplane/api/addons/AddonApi"
import type { Authentication } from "@hostplane/api/auth/Authentication"
import { noStore } from "@hostplane/api/server/NoStore"
import { Addons, Kernel } from "@hostplane/core"
import { Effect, type Layer, type Scope } from "effect"
import { HttpApiBuilder, type HttpApiEndpoint, type HttpApiGroup } from "effect/http-api"
import { type AreaHttp, areaApi, areaHttp } from "../Area.ts"

const actor = Effect.service(Kernel.CurrentActor)

interface ProjectParams {
  readonly orgSlug: string
  readonly projectName: string
}

/** The handlers of the extra endpoints, as `HttpApiBuilder.group` hands them over. */
export type ExtraHandlers<Extra extends HttpApiEndpoint.Constraint> = HttpApiBuilder.Handlers<
  never,
  { readonly [E in Extra as E["identifier"]]: HttpApiEndpoint.AddMiddleware<E, typeof Authentication.Identifier> }
>

export interface AddonAreaOptions<Extra extends HttpApiEndpoint.Constraint, R, E, RX> extends AddonGroupOptions<Extra> {
  /** Their handlers: `handlers.handle(...)` for each extra endpoint, answering the handlers. */
  readonly handle?: (
    handlers: ExtraHandlers<Extra>
  ) => Effect.Effect<HttpApiBuilder.Handlers<R, any, any>, E, RX> | HttpApiBuilder.Handlers<R, any, any>
  /** The spec's rows of the extra endpoints, for the route pin (`GET /v1/orgs/{orgSlug}/projects/{projectName}/...`). */
  readonly routes?: ReadonlyArray<string>
}

/**
 * An add-on's whole `/v1` area from its definition: `GET` (status, viewer), `POST` (grant, member, 200) and `DELETE`
 * (revoke, admin, 204) on `/v1/orgs/{orgSlug}/projects/{projectName}/<name>`, their handlers on `Addons.Addons`, and
 * their route rows; extra endpoints join the same group with their own handlers and rows.
 */
export const addonAreaHttp = <
  const D extends Addons.AnyAddonDefinition,
  Extra extends HttpApiEndpoint.Constraint = never,
  R = never,
  E = never,
  RX = never
>(
  definition: D,
  options: AddonAreaOptions<Extra, R, E, RX> & {
    /**
     * The add-on's group as `@hostplane/api` declares it (`addonGroup`); without it the group is built here from the
     * definition and the options above (an add-on outside the published API, as in tests).
     */
    readonly group?: AddonGroup<D, Extra>
  } = {}
): AreaHttp<
  readonly [AddonGroup<D, Extra>],
  HttpApiGroup.Service<"hostplane", D["name"]>,
  E,
  Addons.Addons | Exclude<R | RX, Scope.Scope>
> => {
  const group = options.group ?? addonGroup<D, Extra>(definition, options)
  const api = areaApi(group as unknown as AddonGroup<Addons.AnyAddonDefinition, never>)
  const handlers = HttpApiBuilder.group(
    api,
    definition.name,
    Effect.fn(function* (handlers: any) {
      const addons = yield* Addons.Addons
      handlers
        .handle("status", ({ params }: { params: ProjectParams }) =>
          Effect.flatMap(actor, (a) => addons.status(definition, a, params.orgSlug, params.projectName))
        )
        .handle("grant", ({ params }: { params: ProjectParams }) =>
          Effect.flatMap(actor, (a) => addons.grant(definition, a, params.orgSlug, params.projectName)).pipe(
            Effect.map((answer) => (options.secret === true ? noStore(answer) : answer))
          )
        )
      if (definition.revocable) {
        handlers.handle("revoke", ({ params }: { params: ProjectParams }) =>
          Effect.flatMap(actor, (a) => addons.revoke(definition, a, params.orgSlug, params.projectName))
        )
      }
      if (options.handle === undefined) return handlers
      const extended = options.handle(handlers)
      return Effect.isEffect(extended) ? yield* extended : extended
    }) as any
  ) as unknown as Layer.Layer<
    HttpApiGroup.Service<"hostplane", D["name"]>,
    E,
    Addons.Addons | Exclude<R | RX, Scope.Scope>
  >
  const base = `/v1/orgs/{orgSlug}/projects/{projectName}/${definition.name}`
  return areaHttp({
    name: definition.name,
    groups: [group] as const,
    handlers,
    routes: [
      `GET ${base}`,
      `POST ${base}`,
      ...(definition.revocable ? [`DELETE ${base}`] : []),
      ...(options.routes ?? [])
    ]
  })
}
