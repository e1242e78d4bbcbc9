import { areaMemory } from "../Area.ts"
import * as LogStoreMemory from "./LogStoreMemory.ts"
import { logStoreSuite } from "./LogStoreSuite.ts"

export const LogsAreaMemory = areaMemory({
  name: "logs",
  stores: LogStoreMemory.layer,
  suites: [logStoreSuite]
})
