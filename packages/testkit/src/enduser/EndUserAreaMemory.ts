import { areaMemory } from "../Area.ts"
import * as AuthStoreMemory from "./AuthStoreMemory.ts"
import { authStoreSuite } from "./AuthStoreSuite.ts"

export const EndUserAreaMemory = areaMemory({
  name: "enduser",
  stores: AuthStoreMemory.layer,
  suites: [authStoreSuite]
})
