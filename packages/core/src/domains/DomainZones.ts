import { Context, Effect, Layer } from "effect"
import { DnsNotConfigured, type ZoneTaken } from "../errors/Errors.ts"
import { Zones } from "../dns/Zones.ts"
import type { OrgId, UserId } from "../kernel/Ids.ts"
import { Mutation, unaudited } from "../kernel/Mutation.ts"

export interface DomainZonesShape {
  /** 503 `dns_not_configured` when the deployment's DNS is off. */
  readonly enabled: Effect.Effect<void, DnsNotConfigured>
  /** Creates the zone for `name` in the org unless the org has it; `ZoneTaken` when another org's zone covers it. */
  readonly ensure: (input: {
    readonly orgId: OrgId
    readonly name: string
    readonly actorId: UserId
  }) => Effect.Effect<void, ZoneTaken | DnsNotConfigured>
}

/**
 * The DNS zones a domain needs (spec 4.13): a purchase and an import create the org's zone for the name. The domains
 * area builds it from the DNS area's `Zones` (`layer`); a host or a test gives its own through `domainsAreaWith`.
 */
export class DomainZones extends Context.Service<DomainZones, DomainZonesShape>()(
  "@hostplane/core/domains/DomainZones"
) {
  /** The DNS area's zones: the zone is made under the org lock, with no audit row of its own. */
  static readonly layer: Layer.Layer<DomainZones, never, Zones | Mutation> = Layer.effect(
    DomainZones,
    Effect.gen(function* () {
      const zones = yield* Zones
      const mutation = yield* Mutation
      return {
        enabled: zones.requireEnabled,
        ensure: ({ orgId, name, actorId }) =>
          mutation.lockedOrg({ userId: actorId, provider: "", subject: "", email: null, name: null }, orgId, (at) =>
            zones.ensureZone(orgId, name, at).pipe(
              Effect.catchTag("BadRequest", (error) => Effect.die(error)),
              Effect.as(unaudited(undefined))
            )
          )
      }
    })
  )

  /** No DNS: purchases and imports answer 503 `dns_not_configured`. */
  static readonly layerNone: Layer.Layer<DomainZones> = Layer.succeed(DomainZones, {
    enabled: Effect.fail(new DnsNotConfigured({ message: "DNS is off in this deployment" })),
    ensure: () => Effect.fail(new DnsNotConfigured({ message: "DNS is off in this deployment" }))
  })
}
