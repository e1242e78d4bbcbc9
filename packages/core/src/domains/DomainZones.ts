import { Context, type Effect } from "effect"
import type { ZoneTaken } from "../errors/Errors.ts"
import type { OrgId, UserId } from "../kernel/Ids.ts"

/**
 * The DNS zones a domain needs (spec 4.13): a purchase and an import create the org's zone for the name. The DNS area
 * provides it; without it (DNS off) purchases and imports answer 503 `dns_not_configured`.
 */
export class DomainZones extends Context.Service<
  DomainZones,
  {
    /** Creates the zone for `name` in the org unless the org has it; `ZoneTaken` when another org's zone covers it. */
    readonly ensure: (input: {
      readonly orgId: OrgId
      readonly name: string
      readonly actorId: UserId
    }) => Effect.Effect<void, ZoneTaken>
  }
>()("@hostplane/core/domains/DomainZones") {}
