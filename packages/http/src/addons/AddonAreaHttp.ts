import { Addons, Errors, Kernel } from "@hostplane/core"
import { Effect, type Layer, type Scope } from "effect"
import { HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { type AreaHttp, areaApi, areaHttp } from "../Area.ts"
import { Authentication } from "../auth/Authentication.ts"
import { apiError, apiErrors } from "../errors/ApiError.ts"
import { ProjectRef } from "../projects/ProjectRef.ts"
import { noStore, secretSuccess } from "../server/NoStore.ts"

const describe = (...lines: ReadonlyArray<string>) => OpenApi.annotations({ description: lines.join(" ") })

const actor = Effect.service(Kernel.CurrentActor)

interface ProjectParams {
  readonly orgSlug: string
  readonly projectName: string
}

/** `/orgs/:orgSlug/projects/:projectName/<name>`, the path of an add-on's status, grant and revoke. */
export type AddonPath<Name extends string> = `/orgs/:orgSlug/projects/:projectName/${Name}`

/** The status, grant and revoke endpoints of `definition`, documented with the shared rules. */
export const addonEndpoints = <D extends Addons.AnyAddonDefinition>(
  definition: D,
  options: { readonly secret?: boolean } = {}
) => {
  const name = definition.name as D["name"]
  const path = `/orgs/:orgSlug/projects/:projectName/${name}` as AddonPath<D["name"]>
  const refusals = definition.refusals.map((refusal) => apiError(refusal)) as unknown as ReadonlyArray<
    ReturnType<typeof apiError<D["refusals"][number]>>
  >
  const audit = (action: "grant" | "revoke") =>
    definition.audit === undefined
      ? "No audit row."
      : `Audit \`${definition.audit[action]}\` when it changes something.`
  const status = HttpApiEndpoint.get("status", path, {
    params: ProjectRef,
    success: definition.status as D["status"],
    error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.NoCore)
  })
    .annotate(OpenApi.Summary, `Read the ${name} add-on`)
    .annotateMerge(describe("Viewer or higher. 503 `no_core` when the add-on's backend is not connected."))
  const grant = HttpApiEndpoint.post("grant", path, {
    params: ProjectRef,
    // A grant answer that carries a secret is `no-store`; its body is the same schema.
    success: (options.secret === true ? secretSuccess(definition.granted) : definition.granted) as D["granted"],
    error: [...apiErrors(Errors.NotFound, Errors.Forbidden, Errors.NoCore, Errors.OpInFlight), ...refusals]
  })
    .annotate(OpenApi.Summary, `Grant the ${name} add-on`)
    .annotateMerge(
      describe(
        "Member or higher. No body. Idempotent: a repeat answers the same and changes nothing. 503 `no_core` when",
        "the add-on's backend is not connected; a project being deleted is 409 `op_in_flight`. The node connects",
        `the binding at its next convergence. ${audit("grant")}`
      )
    )
  const revoke = HttpApiEndpoint.delete("revoke", path, {
    params: ProjectRef,
    success: HttpApiSchema.NoContent,
    error: [...apiErrors(Errors.NotFound, Errors.Forbidden, Errors.NoCore, Errors.OpInFlight), ...refusals]
  })
    .annotate(OpenApi.Summary, `Revoke the ${name} add-on`)
    .annotateMerge(
      describe(
        "Admin. Idempotent: 204 even when not granted. 503 `no_core` when the add-on's backend is not connected; a",
        `project being deleted is 409 \`op_in_flight\`. ${audit("revoke")}`
      )
    )
  return { status, grant, revoke }
}

type Endpoints<D extends Addons.AnyAddonDefinition> = ReturnType<typeof addonEndpoints<D>>

/** The endpoints an add-on's group serves: status and grant, and revoke unless the add-on is not revocable. */
export type AddonEndpoints<D extends Addons.AnyAddonDefinition> =
  Endpoints<D>["status"] | Endpoints<D>["grant"] | (D["revocable"] extends false ? never : Endpoints<D>["revoke"])

/** The group of an add-on and the extra endpoints it declares, behind the session middleware. */
export type AddonGroup<
  D extends Addons.AnyAddonDefinition,
  Extra extends HttpApiEndpoint.Constraint
> = HttpApiGroup.HttpApiGroup<
  D["name"],
  HttpApiEndpoint.AddMiddleware<AddonEndpoints<D> | Extra, typeof Authentication.Identifier>
>

/** The handlers of the extra endpoints, as `HttpApiBuilder.group` hands them over. */
export type ExtraHandlers<Extra extends HttpApiEndpoint.Constraint> = HttpApiBuilder.Handlers<
  never,
  { readonly [E in Extra as E["identifier"]]: HttpApiEndpoint.AddMiddleware<E, typeof Authentication.Identifier> }
>

export interface AddonAreaOptions<Extra extends HttpApiEndpoint.Constraint, R, E, RX> {
  /** The grant's answer carries a secret (the database's password): `Cache-Control: no-store`. */
  readonly secret?: boolean
  /** The docs' description of the group. */
  readonly description?: string
  /** More endpoints of the add-on (the database's tokens, exports, operations...), in the same group. */
  readonly endpoints?: ReadonlyArray<Extra>
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
  options: AddonAreaOptions<Extra, R, E, RX> = {}
): AreaHttp<
  readonly [AddonGroup<D, Extra>],
  HttpApiGroup.Service<"hostplane", D["name"]>,
  E,
  Addons.Addons | Exclude<R | RX, Scope.Scope>
> => {
  const { status, grant, revoke } = addonEndpoints(definition, { secret: options.secret ?? false })
  const own = definition.revocable ? [status, grant, revoke] : [status, grant]
  const group = HttpApiGroup.make(definition.name)
    .add(...(own as [typeof status]), ...((options.endpoints ?? []) as unknown as ReadonlyArray<typeof status>))
    .middleware(Authentication)
    .annotateMerge(
      OpenApi.annotations({
        title: definition.name,
        description: options.description ?? `The ${definition.name} add-on (spec 4.6-4.10).`
      })
    ) as unknown as AddonGroup<D, Extra>
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
