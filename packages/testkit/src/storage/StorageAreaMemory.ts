import { areaMemory } from "../Area.ts"
import * as StorageStoreMemory from "./StorageStoreMemory.ts"
import { storageStoreSuite } from "./StorageStoreSuite.ts"

export const StorageAreaMemory = areaMemory({
  name: "storage",
  stores: StorageStoreMemory.layer,
  suites: [storageStoreSuite]
})
