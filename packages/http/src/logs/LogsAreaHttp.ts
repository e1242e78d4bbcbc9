import { Layer } from "effect"
import { LogsApi, NodeLogsApi } from "@hostplane/api/logs/LogsApi"
import { areaHttp } from "../Area.ts"
import { LogsHandlers, NodeLogsHandlers } from "./LogsHandlers.ts"

export const LogsAreaHttp = areaHttp({
  name: "logs",
  groups: [LogsApi, NodeLogsApi],
  handlers: Layer.merge(LogsHandlers, NodeLogsHandlers),
  routes: [
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/logs",
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/logs/stream",
    "POST /v1/node/logs"
  ]
})
