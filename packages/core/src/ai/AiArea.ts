import { Layer } from "effect"
import { area } from "../Area.ts"
import { aiAddonProvider } from "./AiAddon.ts"
import { AiCatalog } from "./AiCatalog.ts"
import { AiKeyStore } from "./AiKeyStore.ts"
import { Credits } from "./Credits.ts"

/**
 * Spec 4.10: the AI add-on (a gateway key per granted project), the catalog, the org's prepaid credit and its ledger
 * (the ledger's store is billing's, since `order.paid` raises it).
 */
export const AiArea = area({
  name: "ai",
  stores: [AiKeyStore],
  services: Layer.merge(Credits.layer, AiCatalog.layer),
  addon: aiAddonProvider
})
