import { EndUser, Errors } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiSchema, OpenApi } from "effect/http-api"
import { addonGroup } from "../addons/AddonApi.ts"
import { ruled } from "../auth/Rules.ts"
import { endUserRules } from "@hostplane/core/enduser/EndUserRules"
import { apiErrors } from "../errors/ApiError.ts"
import { ProjectRef } from "../projects/ProjectRef.ts"

const path = "/orgs/:orgSlug/projects/:projectName/auth" as const

const describe = (...lines: ReadonlyArray<string>) => OpenApi.annotations({ description: lines.join(" ") })

const ProviderRef = { ...ProjectRef, provider: Schema.String }

/** Spec 4.9 beyond grant, status and revoke: the settings and the providers, served in the auth add-on's group. */
export const authEndpoints = [
  HttpApiEndpoint.patch("settings", path, {
    params: ProjectRef,
    payload: EndUser.AuthSettingsPatch,
    success: EndUser.AuthStatus,
    error: apiErrors(Errors.BadRequest, Errors.NotFound, Errors.NotGranted, Errors.Forbidden, Errors.OpInFlight)
  })
    .annotate(OpenApi.Summary, "Change the end-user sign-in settings")
    .annotateMerge(
      describe(
        "Partial: only the fields sent change (`sessionDays` 1..365, `allowSignups`). 404 `not_granted` while",
        "auth is off (404 `not_found` when the project is missing). Audit `auth.settings` when something changed."
      )
    )
    .pipe(ruled(endUserRules.settings)),
  HttpApiEndpoint.put("putProvider", `${path}/providers/:provider`, {
    params: ProviderRef,
    payload: EndUser.AuthProviderPut,
    success: EndUser.AuthStatus,
    error: apiErrors(
      Errors.BadRequest,
      Errors.InvalidProvider,
      Errors.NotFound,
      Errors.NotGranted,
      Errors.Forbidden,
      Errors.OpInFlight
    )
  })
    .annotate(OpenApi.Summary, "Register a sign-in provider")
    .annotateMerge(
      describe(
        "`provider` is `github`, `google` or `discord`; `clientId` and `clientSecret` must not be empty; otherwise",
        "400 `invalid_provider`. Idempotent; rotation is the same call. The secret is sealed and never returned.",
        "Register `https://<host>/__service/auth/callback/<provider>` with the provider for each host in `hosts`.",
        "404 `not_granted` while auth is off. Audit `auth.provider.set` (without the secret)."
      )
    )
    .pipe(ruled(endUserRules.putProvider)),
  HttpApiEndpoint.delete("deleteProvider", `${path}/providers/:provider`, {
    params: ProviderRef,
    success: HttpApiSchema.NoContent,
    error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.OpInFlight)
  })
    .annotate(OpenApi.Summary, "Remove a sign-in provider")
    .annotateMerge(
      describe(
        "204 also for an unknown or unregistered provider. Sign-in through that provider stops at once, and its",
        "entries in the users' identities are removed (a job on the project's database); end users keep their",
        "records, and sessions already open run until they expire or sign out. Audit `auth.provider.delete` when a",
        "provider was removed."
      )
    )
    .pipe(ruled(endUserRules.deleteProvider))
] as const

/** Spec 4.9: the auth add-on (status, grant, revoke) with its settings and providers in one group. */
export const AuthAddonApi = addonGroup(EndUser.authAddon, {
  description: "Spec 4.9: sign-in for a project's own visitors, run by the edge's auth worker.",
  endpoints: authEndpoints
})
