import { Layer } from "effect"
import { area } from "../Area.ts"
import { AiCatalog } from "./AiCatalog.ts"
import { Credits } from "./Credits.ts"

/** Spec 4.10: the AI catalog, the org's prepaid credit and its ledger (the ledger's store is billing's). */
export const AiArea = area({ name: "ai", stores: [], services: Layer.merge(Credits.layer, AiCatalog.layer) })
