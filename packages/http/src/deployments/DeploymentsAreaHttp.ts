import { areaHttp } from "../Area.ts"
import { DeploymentsApi } from "@hostplane/api/deployments/DeploymentsApi"
import { DeploymentsHandlers } from "./DeploymentsHandlers.ts"

export const DeploymentsAreaHttp = areaHttp({
  name: "deployments",
  groups: [DeploymentsApi],
  handlers: DeploymentsHandlers,
  routes: [
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/deployments",
    "POST /v1/orgs/{orgSlug}/projects/{projectName}/deployments",
    "POST /v1/orgs/{orgSlug}/projects/{projectName}/rollback"
  ]
})
