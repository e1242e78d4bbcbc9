import { Hostnames } from "@hostplane/core"
import { Effect, Layer } from "effect"

const nxdomain = (name: string, type: string) =>
  Effect.fail(
    new Hostnames.DnsLookupError({
      reason: "nxdomain",
      name,
      type,
      message: `${type} ${name}: no such name (NXDOMAIN)`
    })
  )

/** A resolver for which no name exists and no hosted zone: for tests that build the core services but verify nothing. */
export const dnsNone: Layer.Layer<Hostnames.DnsResolver | Hostnames.HostedZones> = Layer.merge(
  Layer.succeed(Hostnames.DnsResolver, {
    txt: (name) => nxdomain(name, "TXT"),
    cname: (name) => nxdomain(name, "CNAME")
  }),
  Hostnames.HostedZones.layerNone
)
