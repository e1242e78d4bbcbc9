import { areaHttp } from "../Area.ts"
import { AiApi } from "./AiApi.ts"
import { AiHandlers } from "./AiHandlers.ts"

export const AiAreaHttp = areaHttp({
  name: "ai",
  groups: [AiApi],
  handlers: AiHandlers,
  routes: [
    "GET /v1/ai/models",
    "GET /v1/orgs/{orgSlug}/ai/credit",
    "GET /v1/orgs/{orgSlug}/ai/ledger",
    "POST /v1/orgs/{orgSlug}/ai/credit/checkout",
    "PUT /v1/orgs/{orgSlug}/ai/autotopup"
  ]
})
