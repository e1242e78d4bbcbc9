import { areaHttp } from "../Area.ts"
import { AccessApi } from "@hostplane/api/access/AccessApi"
import { AccessHandlers } from "./AccessHandlers.ts"

export const AccessAreaHttp = areaHttp({
  name: "access",
  groups: [AccessApi],
  handlers: AccessHandlers,
  routes: [
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/access",
    "PUT /v1/orgs/{orgSlug}/projects/{projectName}/access",
    "POST /v1/orgs/{orgSlug}/projects/{projectName}/access/bypass",
    "DELETE /v1/orgs/{orgSlug}/projects/{projectName}/access/bypass",
    "POST /v1/access/authorize"
  ]
})
