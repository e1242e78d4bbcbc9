import { areaMemory } from "../Area.ts"
import { domainStoreSuite } from "./DomainStoreSuite.ts"
import * as DomainStoreMemory from "./DomainStoreMemory.ts"

export const DomainsAreaMemory = areaMemory({
  name: "domains",
  stores: DomainStoreMemory.layer,
  suites: [domainStoreSuite]
})
