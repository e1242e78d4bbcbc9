import { Context, Effect, Layer, Option } from "effect"

/** The DNS zones the service hosts (spec 4.14): a name inside an org's own zone needs no further ownership proof. */
export class HostedZones extends Context.Service<
  HostedZones,
  {
    /** The org owning the most specific hosted zone that contains `host` (the zone apex included); none outside every hosted zone. */
    readonly ownerOrgOf: (host: string) => Effect.Effect<Option.Option<string>>
  }
>()("@hostplane/core/hostnames/HostedZones") {
  /** No hosted zones: for deployments without the DNS area, so zone proof never applies. */
  static readonly layerNone: Layer.Layer<HostedZones> = Layer.succeed(HostedZones, {
    ownerOrgOf: () => Effect.succeed(Option.none())
  })
}
