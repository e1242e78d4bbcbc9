import { areaHttp } from "../Area.ts"
import { SecretsApi } from "@hostplane/api/secrets/SecretsApi"
import { SecretsHandlers } from "./SecretsHandlers.ts"

export const SecretsAreaHttp = areaHttp({
  name: "secrets",
  groups: [SecretsApi],
  handlers: SecretsHandlers,
  routes: [
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/secrets",
    "PUT /v1/orgs/{orgSlug}/projects/{projectName}/secrets/{secretName}",
    "DELETE /v1/orgs/{orgSlug}/projects/{projectName}/secrets/{secretName}"
  ]
})
