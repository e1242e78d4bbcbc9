import { areaMemory } from "../Area.ts"
import * as EmailStoreMemory from "./EmailStoreMemory.ts"
import { emailStoreSuite } from "./EmailStoreSuite.ts"

export const EmailAreaMemory = areaMemory({
  name: "email",
  stores: EmailStoreMemory.layer,
  suites: [emailStoreSuite]
})
