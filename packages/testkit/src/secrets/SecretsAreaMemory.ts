import { areaMemory } from "../Area.ts"
import { secretStoreSuite } from "./SecretStoreSuite.ts"
import * as SecretStoreMemory from "./SecretStoreMemory.ts"

export const SecretsAreaMemory = areaMemory({
  name: "secrets",
  stores: SecretStoreMemory.layer,
  suites: [secretStoreSuite]
})
