import type { Effect } from "effect"
import { Registrar } from "./Registrar.ts"
import { area } from "../Area.ts"
import type { JobHandler } from "../jobs/Job.ts"
import { domainPurchaseHandler } from "./DomainPurchase.ts"
import { domainHoldings, Domains } from "./Domains.ts"
import { DomainStore } from "./DomainStore.ts"
import { domainSyncHandler } from "./DomainSync.ts"

type HandlerNeeds = Effect.Services<typeof domainPurchaseHandler> | Effect.Services<typeof domainSyncHandler>
const jobs: ReadonlyArray<Effect.Effect<JobHandler, never, HandlerNeeds>> = [domainPurchaseHandler, domainSyncHandler]

/** Spec 4.13: domains bought through the `Registrar` port or imported; an org holds its domains. */
export const DomainsArea = area({
  name: "domains",
  ports: [Registrar.off],
  stores: [DomainStore],
  services: Domains.layer,
  holdings: [domainHoldings],
  jobs
})
