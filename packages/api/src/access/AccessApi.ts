import { withRules } from "../auth/Rules.ts"
import { accessRules } from "@hostplane/core/access/AccessPolicyRules"
import { Access, Errors } from "@hostplane/core"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../auth/Authentication.ts"
import { apiErrors } from "../errors/ApiError.ts"
import { ProjectRef } from "../projects/ProjectRef.ts"
import { secretSuccess } from "../server/NoStore.ts"

/**
 * Spec 4.11 lists 503 `no_core` on every access operation; in hostplane the policy lives in the control database
 * itself, so no answer carries it, but the document keeps the spec's contract.
 */
const access = apiErrors(Errors.NotFound, Errors.Forbidden, Errors.NoCore)
/** The errors of a write to the project: a project being deleted is 409 `op_in_flight`. */
const write = apiErrors(Errors.NotFound, Errors.Forbidden, Errors.OpInFlight, Errors.NoCore)

const describe = (...lines: ReadonlyArray<string>) => OpenApi.annotations({ description: lines.join(" ") })

/** Spec 4.11: who may open a project's deployments, and the one-time codes the edge redeems. */
export class AccessApi extends withRules(
  HttpApiGroup.make("access")
    .add(
      HttpApiEndpoint.get("get", "/orgs/:orgSlug/projects/:projectName/access", {
        params: ProjectRef,
        success: Access.AccessPolicy,
        error: access
      })
        .annotate(OpenApi.Summary, "Read the access policy")
        .annotateMerge(describe("A project that never set a policy is `public`. No password is ever shown.")),
      HttpApiEndpoint.put("set", "/orgs/:orgSlug/projects/:projectName/access", {
        params: ProjectRef,
        payload: Access.SetAccessPolicyInput,
        success: Access.AccessPolicy,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest, Errors.OpInFlight, Errors.NoCore)
      })
        .annotate(OpenApi.Summary, "Set the access policy")
        .annotateMerge(
          describe(
            "`mode` is `public`, `org` (member or higher of the owning org) or `password` (one shared password,",
            "8 to 200 characters, stored only as a scrypt hash). Omitting `password` keeps the stored one; mode",
            "`password` when no password was ever set is 400 `bad_request`. A project being deleted is 409",
            "`op_in_flight`. Audit `access.set` (without the password)."
          )
        ),
      HttpApiEndpoint.post("newBypass", "/orgs/:orgSlug/projects/:projectName/access/bypass", {
        params: ProjectRef,
        success: secretSuccess(Access.AccessBypass),
        error: write
      })
        .annotate(OpenApi.Summary, "Issue a bypass secret")
        .annotateMerge(
          describe(
            "Issues a bypass secret (32 random bytes, base64url), shown only in this response and stored as",
            "SHA-256; it replaces the previous one. CI sends it as `Service-Access-Bypass: <secret>`. A project being",
            "deleted is 409 `op_in_flight`. Audit `access.bypass.new`."
          )
        ),
      HttpApiEndpoint.delete("revokeBypass", "/orgs/:orgSlug/projects/:projectName/access/bypass", {
        params: ProjectRef,
        success: HttpApiSchema.NoContent,
        error: write
      })
        .annotate(OpenApi.Summary, "Revoke the bypass secret")
        .annotateMerge(
          describe(
            "204 even when there is no bypass; the policy is unchanged. A project being deleted is 409",
            "`op_in_flight`. Audit `access.bypass.revoke`."
          )
        ),
      HttpApiEndpoint.post("authorize", "/access/authorize", {
        payload: Access.AuthorizeInput,
        success: secretSuccess(Access.AccessAuthorize),
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest, Errors.NoCore)
      })
        .annotate(OpenApi.Summary, "Get a one-time access code for a protected host")
        .annotateMerge(
          describe(
            "Login. `to` is an active hostname of a project (unknown or still pending: 404); `next` a path on that host",
            "(starting with one `/`, else 400). The caller needs viewer or higher in the owning org, else 403. Answers",
            "`https://<to>/__service/access/callback?code=<code>&next=<next, URL-encoded>`: the code is single use,",
            "bound to `to`, and lives 60 seconds."
          )
        )
    )
    .middleware(Authentication)
    .annotateMerge(
      OpenApi.annotations({ title: "Access policy", description: "Deployment access policy (spec 4.11)." })
    ),
  accessRules
) {}
