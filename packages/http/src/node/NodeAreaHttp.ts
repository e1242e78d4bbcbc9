import { areaHttp } from "../Area.ts"
import { NodeApi } from "@hostplane/api/node/NodeApi"
import { NodeHandlers } from "./NodeHandlers.ts"

export const NodeAreaHttp = areaHttp({
  name: "node",
  groups: [NodeApi],
  handlers: NodeHandlers,
  routes: [
    "GET /v1/node/state",
    "GET /v1/node/projects/{projectId}/secrets",
    "POST /v1/node/usage",
    "GET /v1/node/artifacts/{digest}",
    "POST /v1/node/access/check",
    "POST /v1/node/access/code",
    "POST /v1/node/access/password",
    "POST /v1/node/auth/signin",
    "POST /v1/node/auth/user",
    "GET /v1/node/database/authority"
  ]
})
