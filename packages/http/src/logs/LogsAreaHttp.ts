import { areaHttp } from "../Area.ts"
import { LogsApi } from "@hostplane/api/logs/LogsApi"
import { LogsHandlers } from "./LogsHandlers.ts"

export const LogsAreaHttp = areaHttp({
  name: "logs",
  groups: [LogsApi],
  handlers: LogsHandlers,
  routes: [
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/logs",
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/logs/stream"
  ]
})
