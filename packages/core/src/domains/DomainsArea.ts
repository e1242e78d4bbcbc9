import { type Effect, Layer } from "effect"
import { Registrar } from "./Registrar.ts"
import { area } from "../Area.ts"
import type { JobHandler } from "../jobs/Job.ts"
import { domainPurchaseHandler } from "./DomainPurchase.ts"
import { domainHoldings, Domains } from "./Domains.ts"
import { DomainStore } from "./DomainStore.ts"
import { DomainZones } from "./DomainZones.ts"
import { domainSyncHandler } from "./DomainSync.ts"

type HandlerNeeds = Effect.Services<typeof domainPurchaseHandler> | Effect.Services<typeof domainSyncHandler>
const jobs: ReadonlyArray<Effect.Effect<JobHandler, never, HandlerNeeds>> = [domainPurchaseHandler, domainSyncHandler]

/**
 * Spec 4.13: domains bought through the `Registrar` port or imported; an org holds its domains. A purchase or an
 * import makes the org's DNS zone through `zones` (a `DomainZones`, which may use the DNS area, listed before).
 */
export const domainsAreaWith = <E, R>(zones: Layer.Layer<DomainZones, E, R>) =>
  area({
    name: "domains",
    ports: [Registrar.off],
    stores: [DomainStore],
    services: Domains.layer.pipe(Layer.provideMerge(zones)),
    holdings: [domainHoldings],
    jobs
  })

/** The domains area on the DNS area's zones. */
export const DomainsArea = domainsAreaWith(DomainZones.layer)
