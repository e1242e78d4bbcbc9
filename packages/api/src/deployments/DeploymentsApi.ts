import { withRules } from "../auth/Rules.ts"
import { deploymentsRules } from "@hostplane/core/deployments/DeploymentsRules"
import { Deployments, Errors, Kernel } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../auth/Authentication.ts"
import { apiErrors } from "../errors/ApiError.ts"
import { ProjectRef } from "../projects/ProjectRef.ts"

const describe = (description: string) => OpenApi.annotations({ description })

const header = (description: string) => Schema.optionalKey(Schema.String.annotate({ description }))

/** The display-only headers of an upload; parsed and checked by core (`Deployments.parseGitHeaders`). */
const gitHeaders = {
  "x-service-git-commit": header("The commit, 7 to 64 hexadecimal characters (stored lowercase); else 400."),
  "x-service-git-message": header(
    "The commit message, percent-encoded UTF-8. Only its first line is kept, without control characters, cut at 200 characters; bad percent-encoding is 400."
  ),
  "x-service-git-branch": header(
    "The branch, percent-encoded UTF-8; control characters or more than 255 characters are 400."
  ),
  "x-service-git-dirty": header("Exactly `true` or `false`; else 400.")
}

/** The bundle content types accepted; any other is 415 `unsupported_media_type`. */
export const bundleContentTypes = ["application/gzip", "application/x-gzip"] as const

const uploadDescription = [
  "The body is the bundle itself: a gzipped tar (`Content-Type: application/gzip`, or the legacy",
  "`application/x-gzip`; any other content type, or none, is 415 `unsupported_media_type`). It holds `service.json` (the",
  "manifest, required: `{ name?, main?, database?, storage?, email?, auth?, ai? }`, flags boolean), `worker/` and",
  "`assets/`, nothing else. The body is streamed, never buffered: it is checked while it is stored, and read only after",
  "the caller is authorized (an outsider gets 404 without a byte read).",
  "\n\nLimits (decisions.md part 3): 100 MiB compressed, 500 MiB uncompressed, 20,000 tar entries. A `Content-Length`",
  "over the compressed limit is 413 before the body is read; otherwise reading stops at the first limit crossed with",
  "413 `payload_too_large`, `details: { measure: compressed_bytes | uncompressed_bytes | entries, limit, value }`.",
  "\n\nA refused bundle is 400 `invalid_bundle` with `details.reason`: `corrupt_gzip`, `corrupt_tar`, `truncated`,",
  "`absolute_path`, `path_traversal`, `bad_path`, `path_too_long`, `nul_in_name`, `name_not_utf8`, `outside_layout`",
  "(an entry outside `service.json`, `worker/`, `assets/`), `duplicate_path`, `symlink`, `hard_link`, `special_file`,",
  "`unsupported_entry`, `manifest_missing`, `manifest_not_file`, `manifest_too_large` (over 64 KiB),",
  "`manifest_not_json`, `manifest_invalid` (with `details.issues`; also a malformed `compatibilityDate`,",
  "`compatibilityFlags` or `workerFirst`), `worker_main_missing` (`worker/` holds files but no entry, or `main` names no",
  "file), `worker_invalid` (the entry does not load in the worker runtime, workerd's message in `details.message`;",
  "checked while the runtime is on); `details.path` names the entry when there is one.",
  "Nothing is kept of a refused upload: no deployment and no artifact.",
  "\n\nAn accepted bundle becomes the project's next `version` (1, 2, 3... per project) and goes live at once (201,",
  "`live: true`); the same bytes uploaded again are a new version. `git` is null when no `X-Service-Git-*` header is",
  "sent. A project being deleted is 409 `op_in_flight`. Audit `deployment.create`.",
  "\n\nWith artifacts in an S3 bucket (`SERVICE_S3_URL`), a bucket that does not answer is 503",
  "`artifact_store_unavailable`, and nothing of the upload is kept."
].join(" ")

/** Spec 4.3: a project's deployments, the bundle upload and rollback. */
export class DeploymentsApi extends withRules(
  HttpApiGroup.make("deployments")
    .add(
      HttpApiEndpoint.get("list", "/orgs/:orgSlug/projects/:projectName/deployments", {
        params: ProjectRef,
        query: Kernel.PageQuery,
        success: Deployments.DeploymentList,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest)
      })
        .annotate(OpenApi.Summary, "List deployments")
        .annotateMerge(
          describe(
            [
              "Newest first; `live` marks the deployment the project serves. Query `limit` (1..200,",
              "default 50) and `cursor` (the `nextCursor` of the previous page; null on the last page). A cursor this list",
              "did not hand out is 400."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.post("upload", "/orgs/:orgSlug/projects/:projectName/deployments", {
        params: ProjectRef,
        headers: gitHeaders,
        payload: HttpApiSchema.StreamUint8Array({ contentType: [...bundleContentTypes] }),
        success: Deployments.Deployment.pipe(HttpApiSchema.status(201)),
        error: apiErrors(
          Errors.NotFound,
          Errors.Forbidden,
          Errors.BadRequest,
          Errors.InvalidBundle,
          Errors.PayloadTooLarge,
          Errors.OpInFlight,
          Errors.ArtifactStoreUnavailable
        )
      })
        .annotate(OpenApi.Summary, "Upload a bundle (deploy)")
        .annotateMerge(describe(uploadDescription)),
      HttpApiEndpoint.post("rollback", "/orgs/:orgSlug/projects/:projectName/rollback", {
        params: ProjectRef,
        payload: Deployments.RollbackInput,
        success: Deployments.Deployment,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.OpInFlight)
      })
        .annotate(OpenApi.Summary, "Roll back to another deployment")
        .annotateMerge(
          describe(
            [
              "Body `{ deploymentId }`: any deployment of this project (older, or newer after an earlier",
              "rollback). Moves the live pointer only: no deployment is created and the served bytes are the very ones",
              "uploaded then. An id that is unknown or belongs to another project is 404. Rolling back to the live",
              "deployment changes nothing. A project being deleted is 409 `op_in_flight`. Audit `deployment.rollback`."
            ].join(" ")
          )
        )
    )
    .middleware(Authentication)
    .annotateMerge(
      OpenApi.annotations({
        title: "Deployments",
        description: "Bundle uploads, the deployment history and rollback (spec 4.3)."
      })
    ),
  deploymentsRules
) {}
