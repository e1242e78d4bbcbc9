import { area } from "../Area.ts"
import { zoneHoldings, Zones } from "./Zones.ts"
import { ZoneStore } from "./ZoneStore.ts"

/** Spec 4.14: DNS zones and rrsets, served by the name server; an org holds its zones. */
export const DnsArea = area({
  name: "dns",
  stores: [ZoneStore],
  services: Zones.layer,
  holdings: [zoneHoldings]
})
