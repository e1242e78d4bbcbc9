import { withRules } from "../auth/Rules.ts"
import { hostnamesRules } from "@hostplane/core/hostnames/HostnamesRules"
import { Errors, Hostnames } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../auth/Authentication.ts"
import { apiErrors } from "../errors/ApiError.ts"
import { ProjectRef } from "../projects/ProjectRef.ts"

const hostname = { ...ProjectRef, host: Schema.String }
const base = "/orgs/:orgSlug/projects/:projectName/hostnames"
const describe = (description: string) => OpenApi.annotations({ description })

/** Spec 4.4: custom hostnames, reserved on add and routed once ownership is proven. */
export class HostnamesApi extends withRules(
  HttpApiGroup.make("hostnames")
    .add(
      HttpApiEndpoint.get("list", base, {
        params: ProjectRef,
        success: Hostnames.HostnameList,
        error: apiErrors(Errors.NotFound, Errors.Forbidden)
      })
        .annotate(OpenApi.Summary, "List hostnames")
        .annotateMerge(describe("The default hostname first (`kind: default`, always `active`), then custom ones.")),
      HttpApiEndpoint.post("add", base, {
        params: ProjectRef,
        payload: Hostnames.AddHostnameInput,
        success: Hostnames.Hostname,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest, Errors.HostnameTaken, Errors.OpInFlight)
      })
        .annotate(OpenApi.Summary, "Add a custom hostname")
        .annotateMerge(
          describe(
            [
              "The name is normalized to lowercase punycode without a trailing dot; wildcards, IP addresses and",
              "names under the service's own domains are 400 `bad_request` (`details.reason` says why). The record starts",
              "`pending_dns` with a random `verify` TXT record and reserves the name in every org; the same project adding",
              "it again gets the existing row unchanged. Ownership is proven by the TXT record, by a CNAME of the name to",
              "`cname` (the fallback origin), or by the name lying in a DNS zone of the same org; a check runs every minute",
              "and on `POST .../verify`. A project being deleted is 409 `op_in_flight`. Audit `hostname.add`."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.delete("remove", `${base}/:host`, {
        params: hostname,
        success: HttpApiSchema.NoContent,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest, Errors.OpInFlight)
      })
        .annotate(OpenApi.Summary, "Remove a custom hostname")
        .annotateMerge(
          describe(
            "Stops routing the name and frees it. The default hostname is 400. A project being deleted is 409 " +
              "`op_in_flight`. Audit `hostname.delete`."
          )
        ),
      HttpApiEndpoint.post("verify", `${base}/:host/verify`, {
        params: hostname,
        success: Hostnames.Hostname,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.OpInFlight)
      })
        .annotate(OpenApi.Summary, "Verify a custom hostname now")
        .annotateMerge(
          describe(
            "Checks ownership now: on success the status becomes `active` and `verifiedAt` is set; otherwise " +
              "the status is unchanged and `lastError` holds what DNS showed. An `active` name is answered unchanged. " +
              "A project being deleted is 409 `op_in_flight`."
          )
        ),
      HttpApiEndpoint.post("retryTls", `${base}/:host/tls/retry`, {
        params: hostname,
        success: Hostnames.Hostname,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.OpInFlight)
      })
        .annotate(OpenApi.Summary, "Retry a failed certificate now")
        .annotateMerge(
          describe(
            [
              "When the name's `tls.status` is `failed`, starts a new ACME attempt at once (the backoff is",
              "waived) and the status becomes `pending`; for any other status nothing changes. 200 with the Hostname",
              "either way. `tls` (decisions.md part 16): `none` when no static certificate covers the name and ACME is",
              "off; `pending` while a certificate is sought; `issued` with `expiresAt` (names the static certificate",
              "covers show it, with its expiry); `failed` with the CA's problem detail in `lastError`, retried with",
              "backoff from 1 minute to 1 day. Certificates are renewed 30 days before they expire. A project being",
              "deleted is 409 `op_in_flight`."
            ].join(" ")
          )
        )
    )
    .middleware(Authentication)
    .annotateMerge(
      OpenApi.annotations({ title: "Hostnames", description: "Custom hostnames of a project (spec 4.4)." })
    ),
  hostnamesRules
) {}
