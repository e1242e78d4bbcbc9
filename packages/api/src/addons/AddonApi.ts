import { type Addons, Errors } from "@hostplane/core"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../auth/Authentication.ts"
import { ruled } from "../auth/Rules.ts"
import { addonRules } from "@hostplane/core/addons/AddonRules"
import { apiError, apiErrors } from "../errors/ApiError.ts"
import { ProjectRef } from "../projects/ProjectRef.ts"
import { secretSuccess } from "../server/NoStore.ts"

const describe = (...lines: ReadonlyArray<string>) => OpenApi.annotations({ description: lines.join(" ") })

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
    .annotateMerge(describe("503 `no_core` when the add-on's backend is not connected."))
    .pipe(ruled(addonRules.status))
  const grant = HttpApiEndpoint.post("grant", path, {
    params: ProjectRef,
    // A grant answer that carries a secret is `no-store`; its body is the same schema.
    success: (options.secret === true ? secretSuccess(definition.granted) : definition.granted) as D["granted"],
    error: [...apiErrors(Errors.NotFound, Errors.Forbidden, Errors.NoCore, Errors.OpInFlight), ...refusals]
  })
    .annotate(OpenApi.Summary, `Grant the ${name} add-on`)
    .annotateMerge(
      describe(
        "No body. Idempotent: a repeat answers the same and changes nothing. 503 `no_core` when the add-on's",
        "backend is not connected; a project being deleted is 409 `op_in_flight`. The node connects the binding at",
        `its next convergence. ${audit("grant")}`
      )
    )
    .pipe(ruled(addonRules.grant))
  const revoke = HttpApiEndpoint.delete("revoke", path, {
    params: ProjectRef,
    success: HttpApiSchema.NoContent,
    error: [...apiErrors(Errors.NotFound, Errors.Forbidden, Errors.NoCore, Errors.OpInFlight), ...refusals]
  })
    .annotate(OpenApi.Summary, `Revoke the ${name} add-on`)
    .annotateMerge(
      describe(
        "Idempotent: 204 even when not granted. 503 `no_core` when the add-on's backend is not connected; a",
        `project being deleted is 409 \`op_in_flight\`. ${audit("revoke")}`
      )
    )
    .pipe(ruled(addonRules.revoke))
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

export interface AddonGroupOptions<Extra extends HttpApiEndpoint.Constraint> {
  /** The grant's answer carries a secret (the database's password): `Cache-Control: no-store`. */
  readonly secret?: boolean
  /** The docs' description of the group. */
  readonly description?: string
  /** More endpoints of the add-on (the database's tokens, exports, operations...), in the same group. */
  readonly endpoints?: ReadonlyArray<Extra>
}

/**
 * An add-on's group from its definition: `GET` (status, viewer), `POST` (grant, member, 200) and `DELETE` (revoke,
 * admin, 204) on `/v1/orgs/{orgSlug}/projects/{projectName}/<name>`, and the extra endpoints, behind the session.
 */
export const addonGroup = <const D extends Addons.AnyAddonDefinition, Extra extends HttpApiEndpoint.Constraint = never>(
  definition: D,
  options: AddonGroupOptions<Extra> = {}
): AddonGroup<D, Extra> => {
  const { status, grant, revoke } = addonEndpoints(definition, { secret: options.secret ?? false })
  const own = definition.revocable ? [status, grant, revoke] : [status, grant]
  return HttpApiGroup.make(definition.name)
    .add(...(own as [typeof status]), ...((options.endpoints ?? []) as unknown as ReadonlyArray<typeof status>))
    .middleware(Authentication)
    .annotateMerge(
      OpenApi.annotations({
        title: definition.name,
        description: options.description ?? `The ${definition.name} add-on (spec 4.6-4.10).`
      })
    ) as unknown as AddonGroup<D, Extra>
}
