import { area, areaSettings } from "../Area.ts"
import { DnsConfig } from "./DnsConfig.ts"
import { zoneHoldings, Zones } from "./Zones.ts"
import { ZoneStore } from "./ZoneStore.ts"

/** Spec 4.14: DNS zones and rrsets, served by the name server; an org holds its zones. */
export const DnsArea = area({
  name: "dns",
  settings: areaSettings({ key: "dns", make: DnsConfig.make, fromEnv: () => DnsConfig.layerConfig }),
  stores: [ZoneStore],
  services: Zones.layer,
  holdings: [zoneHoldings]
})
