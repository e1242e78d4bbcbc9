import { areaMemory } from "../Area.ts"
import { orgStoreSuite } from "./OrgStoreSuite.ts"
import * as OrgStoreMemory from "./OrgStoreMemory.ts"

export const OrgsAreaMemory = areaMemory({ name: "orgs", stores: OrgStoreMemory.layer, suites: [orgStoreSuite] })
