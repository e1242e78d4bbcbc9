import { areaHttp } from "../Area.ts"
import { ProjectsApi } from "@hostplane/api/projects/ProjectsApi"
import { ProjectsHandlers } from "./ProjectsHandlers.ts"

export const ProjectsAreaHttp = areaHttp({
  name: "projects",
  groups: [ProjectsApi],
  handlers: ProjectsHandlers,
  routes: [
    "GET /v1/orgs/{orgSlug}/projects",
    "POST /v1/orgs/{orgSlug}/projects",
    "GET /v1/orgs/{orgSlug}/projects/{projectName}",
    "DELETE /v1/orgs/{orgSlug}/projects/{projectName}",
    "GET /v1/orgs/{orgSlug}/operations/{opId}",
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/overview"
  ]
})
