import { Layer } from "effect"
import { areaMemory } from "../Area.ts"
import { billingStoreSuite } from "./BillingStoreSuite.ts"
import * as BillingStoreMemory from "./BillingStoreMemory.ts"
import * as CreditStoreMemory from "./CreditStoreMemory.ts"

export const BillingAreaMemory = areaMemory({
  name: "billing",
  stores: Layer.merge(BillingStoreMemory.layer, CreditStoreMemory.layer),
  suites: [billingStoreSuite]
})
