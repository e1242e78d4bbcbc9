import { areaMemory } from "../Area.ts"
import { userStoreSuite } from "./UserStoreSuite.ts"
import * as UserStoreMemory from "./UserStoreMemory.ts"

export const IdentityAreaMemory = areaMemory({
  name: "identity",
  stores: UserStoreMemory.layer,
  suites: [userStoreSuite]
})
