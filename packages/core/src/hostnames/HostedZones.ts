import { Context, Effect, Layer, Option } from "effect"

/**
 * The DNS zones the service hosts (spec 4.14): a name inside an org's own zone needs no further ownership proof, and
 * the service keeps the record that points such a name at it.
 */
export class HostedZones extends Context.Service<
  HostedZones,
  {
    /** The org owning the most specific hosted zone that contains `host` (the zone apex included); none outside every hosted zone. */
    readonly ownerOrgOf: (host: string) => Effect.Effect<Option.Option<string>>
    /**
     * Inside the hostname's add: when `host` lies below a zone of `orgId`, a managed CNAME to `target` (the fallback
     * origin) at that name, unless the name already holds records (never overwritten). The apex gets none: a CNAME
     * cannot sit there.
     */
    readonly link: (host: string, orgId: string, target: string, at: string) => Effect.Effect<void>
    /** Inside the hostname's delete: removes the managed record `link` made for `host`, if any. */
    readonly unlink: (host: string, at: string) => Effect.Effect<void>
  }
>()("@hostplane/core/hostnames/HostedZones") {
  /** No hosted zones: for deployments without the DNS area, so zone proof never applies. */
  static readonly layerNone: Layer.Layer<HostedZones> = Layer.succeed(HostedZones, {
    ownerOrgOf: () => Effect.succeed(Option.none()),
    link: () => Effect.void,
    unlink: () => Effect.void
  })
}
