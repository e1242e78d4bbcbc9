import { areaMemory } from "../Area.ts"
import { databaseStoreSuite } from "./DatabaseStoreSuite.ts"
import * as DatabaseStoreMemory from "./DatabaseStoreMemory.ts"

export const DatabaseAreaMemory = areaMemory({
  name: "database",
  stores: DatabaseStoreMemory.layer,
  suites: [databaseStoreSuite]
})
