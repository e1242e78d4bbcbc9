import { areaMemory } from "../Area.ts"
import { edgeSessionStoreSuite } from "./EdgeSessionStoreSuite.ts"
import * as EdgeSessionStoreMemory from "./EdgeSessionStoreMemory.ts"

export const EdgeAreaMemory = areaMemory({
  name: "edge",
  stores: EdgeSessionStoreMemory.layer,
  suites: [edgeSessionStoreSuite]
})
