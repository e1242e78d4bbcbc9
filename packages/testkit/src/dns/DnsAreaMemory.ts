import { areaMemory } from "../Area.ts"
import { zoneStoreSuite } from "./ZoneStoreSuite.ts"
import * as ZoneStoreMemory from "./ZoneStoreMemory.ts"

export const DnsAreaMemory = areaMemory({
  name: "dns",
  stores: ZoneStoreMemory.layer,
  suites: [zoneStoreSuite]
})
