import { areaMemory } from "../Area.ts"
import { idempotencyStoreSuite } from "./IdempotencyStoreSuite.ts"
import * as IdempotencyStoreMemory from "./IdempotencyStoreMemory.ts"

export const IdempotencyAreaMemory = areaMemory({
  name: "idempotency",
  stores: IdempotencyStoreMemory.layer,
  suites: [idempotencyStoreSuite]
})
