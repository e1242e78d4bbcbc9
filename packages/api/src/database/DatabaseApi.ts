import { withRules } from "../auth/Rules.ts"
import { databaseRules } from "@hostplane/core/database/DatabaseRules"
import { Database, Errors, Operations } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../auth/Authentication.ts"
import { apiErrors } from "../errors/ApiError.ts"
import { secretSuccess } from "../server/NoStore.ts"
import { ProjectRef } from "../projects/ProjectRef.ts"

const base = "/orgs/:orgSlug/projects/:projectName/database"
const token = { ...ProjectRef, tokenUser: Schema.String }
const operation = { ...ProjectRef, opId: Schema.String }

const describe = (description: string) => OpenApi.annotations({ description })

/** Spec 4.6: a project's PostgreSQL database, its tokens, generations, export, restore and delete. */
export class DatabaseApi extends withRules(
  HttpApiGroup.make("database")
    .add(
      HttpApiEndpoint.get("status", base, {
        params: ProjectRef,
        success: Database.DatabaseStatus,
        error: apiErrors(Errors.NotFound, Errors.Forbidden)
      })
        .annotate(OpenApi.Summary, "Whether the project has a database")
        .annotateMerge(describe("`{ db }` only: no size, generation or password.")),
      HttpApiEndpoint.post("create", base, {
        params: ProjectRef,
        success: secretSuccess(Database.DatabaseConnect),
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.OpInFlight, Errors.NoHomeNode, Errors.NoNodeAdmin)
      })
        .annotate(OpenApi.Summary, "Create the database")
        .annotateMerge(
          describe(
            [
              "The answer holds the password. Creates the configuration record and the project's",
              "PostgreSQL cluster with its empty baseline generation (epoch 1, seq 1). Idempotent: a repeat answers the",
              "same details; the password is never rotated. The node swaps in `env.db` at its next convergence."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.get("connect", `${base}/connect`, {
        params: ProjectRef,
        success: secretSuccess(Database.DatabaseConnect),
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.NoHomeNode, Errors.NoNodeAdmin)
      })
        .annotate(OpenApi.Summary, "Connection details with the password")
        .annotateMerge(describe("404 when the project has no database.")),
      HttpApiEndpoint.get("endpoint", `${base}/endpoint`, {
        params: ProjectRef,
        success: Database.DatabaseEndpoint,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.NoHomeNode, Errors.NoNodeAdmin)
      })
        .annotate(OpenApi.Summary, "Where the database listens")
        .annotateMerge(describe("Host, port, database and `sslmode` only.")),
      HttpApiEndpoint.get("tokens", `${base}/tokens`, {
        params: ProjectRef,
        success: Database.DatabaseTokenList,
        error: apiErrors(Errors.NotFound, Errors.Forbidden)
      })
        .annotate(OpenApi.Summary, "List database tokens")
        .annotateMerge(describe("Users and creation times; no passwords or verifiers.")),
      HttpApiEndpoint.post("createToken", `${base}/tokens`, {
        params: ProjectRef,
        payload: Database.CreateTokenInput,
        success: secretSuccess(Database.DatabaseToken).pipe(HttpApiSchema.status(201)),
        error: apiErrors(
          Errors.NotFound,
          Errors.Forbidden,
          Errors.BadRequest,
          Errors.OpInFlight,
          Errors.NoHomeNode,
          Errors.NoNodeAdmin
        )
      })
        .annotate(OpenApi.Summary, "Create a database token")
        .annotateMerge(
          describe(
            [
              "Body `{}`. The password is returned here only: the server keeps its SCRAM-SHA-256",
              "verifier, computed before it reaches PostgreSQL. The token's sessions run as the project role",
              "(`current_user` is the project role, `session_user` the token). Audit `database.token.create`."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.delete("deleteToken", `${base}/tokens/:tokenUser`, {
        params: token,
        success: HttpApiSchema.NoContent,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.OpInFlight, Errors.NoHomeNode, Errors.NoNodeAdmin)
      })
        .annotate(OpenApi.Summary, "Delete a database token")
        .annotateMerge(
          describe(
            "Ends the token's open sessions; later connections are refused. Unknown token 404. Audit `database.token.delete`."
          )
        ),
      HttpApiEndpoint.post("export", `${base}/export`, {
        params: ProjectRef,
        success: Database.DatabaseExport,
        error: apiErrors(
          Errors.NotFound,
          Errors.Forbidden,
          Errors.Suspended,
          Errors.ExportFailed,
          Errors.NoHomeNode,
          Errors.NoNodeAdmin
        )
      })
        .annotate(OpenApi.Summary, "Export a diagnostic image")
        .annotateMerge(
          describe(
            [
              "A physical image like a generation, kept apart under `exports/`: never listed, never",
              "restorable, no effect on generations. Not idempotent. The answer waits for the image. 409 `suspended`",
              "while a restore or delete holds the database."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.get("generations", `${base}/generations`, {
        params: ProjectRef,
        success: Database.GenerationList,
        error: apiErrors(Errors.NotFound, Errors.Forbidden)
      })
        .annotate(OpenApi.Summary, "List generations")
        .annotateMerge(
          describe(
            "Newest first (epoch, then seq). Listed even after the database is deleted, so the final safety generation stays visible."
          )
        ),
      HttpApiEndpoint.post("restore", `${base}/restore`, {
        params: ProjectRef,
        payload: Database.RestoreRequest,
        success: Operations.OperationStarted.pipe(HttpApiSchema.status(202)),
        error: apiErrors(
          Errors.NotFound,
          Errors.Forbidden,
          Errors.BadRequest,
          Errors.OpInFlight,
          Errors.OperationInProgress,
          Errors.Suspended,
          Errors.NoHomeNode,
          Errors.NoNodeAdmin
        )
      })
        .annotate(OpenApi.Summary, "Restore a generation")
        .annotateMerge(
          describe(
            [
              "Body `{ epoch, seq }` of a listed generation (the server never resolves latest; an unlisted pair is",
              "404). Starts a `restore_generation` operation: `draining`, `sealing` (a generation of the current state),",
              "`committing`, `reactivation` (epoch raised to one more than any the database had). Writes made meanwhile",
              "are lost. 409 `operation_in_progress` while another operation holds the database. Audit `database.restore`."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.post("remove", `${base}/delete`, {
        params: ProjectRef,
        payload: Database.DeleteRequest,
        success: Operations.OperationStarted.pipe(HttpApiSchema.status(202)),
        error: apiErrors(
          Errors.NotFound,
          Errors.Forbidden,
          Errors.BadRequest,
          Errors.ConfirmMismatch,
          Errors.OpInFlight,
          Errors.OperationInProgress
        )
      })
        .annotate(OpenApi.Summary, "Delete the database")
        .annotateMerge(
          describe(
            [
              "`confirm` must equal the project name exactly (no trimming), else 400 `confirm_mismatch` and nothing",
              "starts. A `delete` operation: `draining`, `sealing` (the final safety generation), `committing` (the",
              "record goes, the cluster moves to the tombstone). Audit `database.delete`."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.get("operation", `${base}/operations/:opId`, {
        params: operation,
        success: Operations.Operation,
        error: apiErrors(Errors.NotFound, Errors.Forbidden)
      })
        .annotate(OpenApi.Summary, "A database operation")
        .annotateMerge(
          describe("An operation of another project (or not a database operation) is 404. Poll every 2 seconds.")
        ),
      HttpApiEndpoint.post("abort", `${base}/operations/:opId/abort`, {
        params: operation,
        success: Operations.Operation,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.NotAbortable)
      })
        .annotate(OpenApi.Summary, "Abort a database operation")
        .annotateMerge(
          describe(
            "Accepted while the phase is `draining` or `sealing`: the database takes connections again and a sealed generation stays. From `committing` on, or once finished: 409 `not_abortable`."
          )
        )
    )
    .middleware(Authentication)
    .annotateMerge(OpenApi.annotations({ title: "Database", description: "The database add-on (spec 4.6)." })),
  databaseRules
) {}
