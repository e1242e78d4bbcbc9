import { Layer } from "effect"
import { areaMemory } from "../Area.ts"
import { billingStoreSuite } from "./BillingStoreSuite.ts"
import * as AiCallStoreMemory from "./AiCallStoreMemory.ts"
import * as AiKeyStoreMemory from "./AiKeyStoreMemory.ts"
import * as BillingStoreMemory from "./BillingStoreMemory.ts"
import * as CreditStoreMemory from "./CreditStoreMemory.ts"

export const BillingAreaMemory = areaMemory({
  name: "billing",
  stores: Layer.mergeAll(
    BillingStoreMemory.layer,
    CreditStoreMemory.layer,
    AiKeyStoreMemory.layer,
    AiCallStoreMemory.layer
  ),
  suites: [billingStoreSuite]
})
