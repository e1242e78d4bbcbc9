import { withRules } from "../auth/Rules.ts"
import { secretsRules } from "@hostplane/core/secrets/SecretsRules"
import { Errors, Secrets } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../auth/Authentication.ts"
import { apiErrors } from "../errors/ApiError.ts"
import { ProjectRef } from "../projects/ProjectRef.ts"

const secret = { ...ProjectRef, secretName: Schema.String }

const describe = (description: string) => OpenApi.annotations({ description })

/** Spec 4.5: project secrets; values go in sealed and never come back out. */
export class SecretsApi extends withRules(
  HttpApiGroup.make("secrets")
    .add(
      HttpApiEndpoint.get("list", "/orgs/:orgSlug/projects/:projectName/secrets", {
        params: ProjectRef,
        success: Secrets.SecretList,
        error: apiErrors(Errors.NotFound, Errors.Forbidden)
      })
        .annotate(OpenApi.Summary, "List secrets")
        .annotateMerge(describe("Names and versions by name; values are never returned.")),
      HttpApiEndpoint.put("put", "/orgs/:orgSlug/projects/:projectName/secrets/:secretName", {
        params: secret,
        payload: Secrets.PutSecretInput,
        success: Secrets.SecretMeta,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest, Errors.ReservedName, Errors.OpInFlight)
      })
        .annotate(OpenApi.Summary, "Set a secret")
        .annotateMerge(
          describe(
            [
              "Creates or replaces the secret; not idempotent: every call raises `version` (1 on the first",
              "put of a name, again 1 after a delete). The value (at most 64 KiB of UTF-8, well-formed Unicode) is sealed",
              "with the active key and never returned; audit `secret.set` records the name only. Names match",
              "`^[A-Za-z_][A-Za-z0-9_]{0,127}$` and are case-sensitive, else 400 `bad_request`. `DB`, `ASSETS` and names",
              "starting `SERVICE_` are 400 `reserved_name`; this check ignores case (`db` and `service_x` are reserved too).",
              "A project being deleted is 409 `op_in_flight`."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.delete("remove", "/orgs/:orgSlug/projects/:projectName/secrets/:secretName", {
        params: secret,
        success: HttpApiSchema.NoContent,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.OpInFlight)
      })
        .annotate(OpenApi.Summary, "Delete a secret")
        .annotateMerge(
          describe("An unknown name is 404. A project being deleted is 409 `op_in_flight`. Audit `secret.delete`.")
        )
    )
    .middleware(Authentication)
    .annotateMerge(OpenApi.annotations({ title: "Secrets", description: "Project secrets (spec 4.5)." })),
  secretsRules
) {}
