import type { Effect } from "effect"
import { Layer } from "effect"
import { area } from "../Area.ts"
import { aiAddonProvider } from "./AiAddon.ts"
import { aiCallSweepHandler } from "./AiCallSweep.ts"
import { AiCallStore } from "./AiCallStore.ts"
import { AiCatalog } from "./AiCatalog.ts"
import { AiGateway } from "./AiGateway.ts"
import { AiKeyStore } from "./AiKeyStore.ts"
import { autoTopupHandler } from "./AutoTopup.ts"
import type { JobHandler } from "../jobs/Job.ts"
import { Credits } from "./Credits.ts"

/**
 * Spec 4.10: the AI add-on (a gateway key per granted project), the catalog, the org's prepaid credit and its ledger
 * (the ledger's store is billing's, since `order.paid` raises it), the gateway that charges calls to it, and the
 * auto top-up job, and the sweep that charges the calls of a gateway process that died mid-call.
 */
export const AiArea = area({
  name: "ai",
  stores: [AiKeyStore, AiCallStore],
  services: Layer.merge(Credits.layer, AiGateway.layer.pipe(Layer.provideMerge(AiCatalog.layer))),
  addon: aiAddonProvider,
  jobs: [autoTopupHandler, aiCallSweepHandler] as ReadonlyArray<
    Effect.Effect<JobHandler, never, Effect.Services<typeof autoTopupHandler | typeof aiCallSweepHandler>>
  >
})
