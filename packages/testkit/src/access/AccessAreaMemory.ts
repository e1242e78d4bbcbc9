import { areaMemory } from "../Area.ts"
import { accessStoreSuite } from "./AccessStoreSuite.ts"
import * as AccessStoreMemory from "./AccessStoreMemory.ts"

export const AccessAreaMemory = areaMemory({
  name: "access",
  stores: AccessStoreMemory.layer,
  suites: [accessStoreSuite]
})
