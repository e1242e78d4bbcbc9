import { areaMemory } from "../Area.ts"
import { hostnameStoreSuite } from "./HostnameStoreSuite.ts"
import * as HostnameStoreMemory from "./HostnameStoreMemory.ts"

export const HostnamesAreaMemory = areaMemory({
  name: "hostnames",
  stores: HostnameStoreMemory.layer,
  suites: [hostnameStoreSuite]
})
