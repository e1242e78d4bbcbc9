import { areaPg } from "../Area.ts"
import createDomains from "./migrations/0001_create_domains.ts"
import * as DomainStorePg from "./DomainStorePg.ts"

export const DomainsAreaPg = areaPg({
  name: "domains",
  stores: DomainStorePg.layer,
  migrations: { "0001_create_domains": createDomains }
})
