import { areaPg } from "../Area.ts"
import createDnsZones from "../migrations/0014_create_dns_zones.ts"
import * as ZoneStorePg from "./ZoneStorePg.ts"

export const DnsAreaPg = areaPg({
  name: "dns",
  stores: ZoneStorePg.layer,
  migrations: { "0014_create_dns_zones": createDnsZones }
})
