import { areaPg } from "../Area.ts"
import createDnsZones from "./migrations/0001_create_dns_zones.ts"
import addManagedRrsets from "./migrations/0002_add_managed_rrsets.ts"
import * as ZoneStorePg from "./ZoneStorePg.ts"

export const DnsAreaPg = areaPg({
  name: "dns",
  stores: ZoneStorePg.layer,
  migrations: { "0001_create_dns_zones": createDnsZones, "0002_add_managed_rrsets": addManagedRrsets }
})
