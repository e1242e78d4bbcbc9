import { Effect, Layer, Option, Schema } from "effect"
import { AiUpstream } from "./AiUpstream.ts"
import { area, areaSettings } from "../Area.ts"
import { AiConfig } from "./AiConfig.ts"
import { aiAddonProvider, aiKeyContext } from "./AiAddon.ts"
import { aiCallSweepHandler } from "./AiCallSweep.ts"
import { AiCallStore } from "./AiCallStore.ts"
import { AiCatalog } from "./AiCatalog.ts"
import { AiGateway } from "./AiGateway.ts"
import { AiKeyStore } from "./AiKeyStore.ts"
import { autoTopupHandler } from "./AutoTopup.ts"
import type { JobHandler } from "../jobs/Job.ts"
import type { ProjectId } from "../kernel/Ids.ts"
import { nodeBinding } from "../node/NodeBinding.ts"
import { Sealer } from "../secrets/Sealer.ts"
import { Credits } from "./Credits.ts"

/**
 * Spec 4.10: the AI add-on (a gateway key per granted project), the catalog, the org's prepaid credit and its ledger
 * (the ledger's store is billing's, since `order.paid` raises it), the gateway that charges calls to it, and the
 * auto top-up job, and the sweep that charges the calls of a gateway process that died mid-call.
 */
export const AiArea = area({
  name: "ai",
  ports: [AiUpstream.off],
  settings: areaSettings({ key: "ai", make: AiConfig.make, fromEnv: () => AiConfig.layerConfig }),
  stores: [AiKeyStore, AiCallStore],
  services: Layer.merge(Credits.layer, AiGateway.layer.pipe(Layer.provideMerge(AiCatalog.layer))),
  addon: aiAddonProvider,
  // The project's gateway key, opened from its sealed copy; null when AI is not granted.
  node: nodeBinding(
    "ai",
    Schema.Struct({ key: Schema.String }),
    Effect.gen(function* () {
      const keys = yield* AiKeyStore
      const sealer = yield* Sealer
      return (projectId: ProjectId) =>
        Effect.gen(function* () {
          const row = yield* keys.find(projectId)
          if (Option.isNone(row)) return null
          // A key that does not open is a broken key ring, not a request's fault.
          return { key: yield* Effect.orDie(sealer.open(row.value.sealed, aiKeyContext(projectId))) }
        })
    })
  ),
  jobs: [autoTopupHandler, aiCallSweepHandler] as ReadonlyArray<
    Effect.Effect<JobHandler, never, Effect.Services<typeof autoTopupHandler | typeof aiCallSweepHandler>>
  >
})
