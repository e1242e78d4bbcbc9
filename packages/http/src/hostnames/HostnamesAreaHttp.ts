import { areaHttp } from "../Area.ts"
import { HostnamesApi } from "@hostplane/api/hostnames/HostnamesApi"
import { HostnamesHandlers } from "./HostnamesHandlers.ts"

export const HostnamesAreaHttp = areaHttp({
  name: "hostnames",
  groups: [HostnamesApi],
  handlers: HostnamesHandlers,
  routes: [
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/hostnames",
    "POST /v1/orgs/{orgSlug}/projects/{projectName}/hostnames",
    "DELETE /v1/orgs/{orgSlug}/projects/{projectName}/hostnames/{host}",
    "POST /v1/orgs/{orgSlug}/projects/{projectName}/hostnames/{host}/verify",
    "POST /v1/orgs/{orgSlug}/projects/{projectName}/hostnames/{host}/tls/retry"
  ]
})
