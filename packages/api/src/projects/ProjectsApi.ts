import { withRules } from "../auth/Rules.ts"
import { projectRules } from "@hostplane/core/projects/ProjectRules"
import { Errors, Operations, Projects } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../auth/Authentication.ts"
import { apiErrors } from "../errors/ApiError.ts"
import { OrgRef, ProjectRef } from "./ProjectRef.ts"

const access = apiErrors(Errors.NotFound, Errors.Forbidden)

/** Spec 4.3: projects and the operations that delete them. */
export class ProjectsApi extends withRules(
  HttpApiGroup.make("projects")
    .add(
      HttpApiEndpoint.get("list", "/orgs/:orgSlug/projects", {
        params: OrgRef,
        success: Schema.Struct({ items: Schema.Array(Projects.Project) }),
        error: access
      }).annotate(OpenApi.Summary, "List projects"),
      HttpApiEndpoint.post("create", "/orgs/:orgSlug/projects", {
        params: OrgRef,
        payload: Projects.CreateProjectInput,
        success: Projects.Project.pipe(HttpApiSchema.status(201)),
        error: apiErrors(
          Errors.NotFound,
          Errors.Forbidden,
          Errors.ProjectNameTaken,
          Errors.HostnameTaken,
          Errors.ProjectLimitReached
        )
      }).annotate(OpenApi.Summary, "Create a project"),
      HttpApiEndpoint.get("get", "/orgs/:orgSlug/projects/:projectName", {
        params: ProjectRef,
        success: Projects.ProjectDetail,
        error: access
      }).annotate(OpenApi.Summary, "Read a project"),
      HttpApiEndpoint.get("overview", "/orgs/:orgSlug/projects/:projectName/overview", {
        params: ProjectRef,
        success: Projects.ProjectOverview,
        error: access
      }).annotate(OpenApi.Summary, "Read a project's overview"),
      HttpApiEndpoint.delete("remove", "/orgs/:orgSlug/projects/:projectName", {
        params: ProjectRef,
        payload: Projects.DeleteProjectInput,
        success: Operations.OperationStarted.pipe(HttpApiSchema.status(202)),
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest, Errors.OpInFlight)
      }).annotate(OpenApi.Summary, "Delete a project"),
      HttpApiEndpoint.get("operation", "/orgs/:orgSlug/operations/:opId", {
        params: { ...OrgRef, opId: Schema.String },
        success: Operations.Operation,
        error: access
      }).annotate(OpenApi.Summary, "Read an operation")
    )
    .middleware(Authentication)
    .annotateMerge(
      OpenApi.annotations({ title: "Projects", description: "Projects and their operations (spec 4.3)." })
    ),
  projectRules
) {}
