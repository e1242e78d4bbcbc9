import { areaHttp } from "../Area.ts"
import { DomainsApi } from "@hostplane/api/domains/DomainsApi"
import { DomainsHandlers } from "./DomainsHandlers.ts"

export const DomainsAreaHttp = areaHttp({
  name: "domains",
  groups: [DomainsApi],
  handlers: DomainsHandlers,
  routes: [
    "GET /v1/orgs/{orgSlug}/domains",
    "POST /v1/orgs/{orgSlug}/domains",
    "POST /v1/orgs/{orgSlug}/domains/check",
    "POST /v1/orgs/{orgSlug}/domains/import",
    "GET /v1/orgs/{orgSlug}/domains/{name}",
    "POST /v1/orgs/{orgSlug}/domains/{name}/renew",
    "POST /v1/orgs/{orgSlug}/domains/{name}/auto-renew",
    "POST /v1/orgs/{orgSlug}/domains/{name}/lock",
    "POST /v1/orgs/{orgSlug}/domains/{name}/auth-code",
    "POST /v1/orgs/{orgSlug}/domains/{name}/sync"
  ]
})
