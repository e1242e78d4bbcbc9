import { areaHttp } from "../Area.ts"
import { DnsApi } from "@hostplane/api/dns/DnsApi"
import { DnsHandlers } from "./DnsHandlers.ts"

export const DnsAreaHttp = areaHttp({
  name: "dns",
  groups: [DnsApi],
  handlers: DnsHandlers,
  routes: [
    "GET /v1/orgs/{orgSlug}/dns/zones",
    "POST /v1/orgs/{orgSlug}/dns/zones",
    "GET /v1/orgs/{orgSlug}/dns/zones/{zone}",
    "DELETE /v1/orgs/{orgSlug}/dns/zones/{zone}",
    "PUT /v1/orgs/{orgSlug}/dns/zones/{zone}/rrsets/{name}/{type}",
    "DELETE /v1/orgs/{orgSlug}/dns/zones/{zone}/rrsets/{name}/{type}",
    "POST /v1/orgs/{orgSlug}/dns/zones/{zone}/dnssec",
    "PUT /v1/orgs/{orgSlug}/dns/zones/{zone}/dnssec/ds"
  ]
})
