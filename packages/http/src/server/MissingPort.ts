import {
  Access,
  type AnyArea,
  areas,
  configLayer,
  Deployments,
  Hostnames,
  Identity,
  Kernel,
  providersOff,
  Secrets
} from "@hostplane/core"
import { type Context, Effect, Layer } from "effect"
import { HostAuthenticator } from "../auth/HostAuthenticator.ts"

/** The keys a layer provides, read by building it (only layers whose build reads nothing outside). */
const keysOf = (layer: Layer.Layer<any>): ReadonlyArray<string> =>
  Effect.runSync(Effect.scoped(Effect.map(Layer.build(layer), (context) => [...context.mapUnsafe.keys()])))

const named = (key: Context.Key<any, any>, hint: string) => [key.key, hint] as const

/**
 * For each port, the layer a host usually provides it with. A port left out is a compile error wherever the layers
 * are typed; a host that casts past that (or builds from JavaScript) gets this hint in the run-time error instead.
 */
const hints = (): ReadonlyMap<string, string> => {
  const map = new Map<string, string>([
    named(Kernel.Tokens, "TokensNode.layer (@hostplane/adapters-providers) or Kernel.Tokens.layer (@hostplane/core)"),
    named(
      Secrets.Sealer,
      "SealerAesGcm.layerConfig (@hostplane/adapters-providers), SealerAesGcm.layerEphemeral in tests"
    ),
    named(Access.PasswordHasher, "PasswordHasherScrypt.layer (@hostplane/adapters-providers)"),
    named(Hostnames.DnsResolver, "DnsResolverUdp.layerConfig (@hostplane/adapters-providers/dns/DnsResolverUdp)"),
    named(Hostnames.HostedZones, "Hostnames.HostedZones.layerNone (@hostplane/core), or Dns.HostedZonesDns.layer"),
    named(Deployments.BundleReader, "BundleReader.layer() (@hostplane/adapters-providers)"),
    named(
      Deployments.ArtifactStore,
      "ArtifactStoreDisk.layerConfig (@hostplane/adapters-providers), ArtifactStoreMemory in @hostplane/testkit"
    ),
    named(
      Identity.IdentityProvider,
      "Identity.IdentityProvider.off (@hostplane/core), or IdentityProviderOAuth.layerConfig"
    ),
    named(HostAuthenticator, "HostAuthenticator.off or HostAuthenticator.fromFunction(...) (@hostplane/http)")
  ])
  for (const key of keysOf(configLayer())) map.set(key, "configLayer(...) (@hostplane/core): every area's settings")
  for (const key of keysOf(providersOff)) {
    const name = key.slice(key.lastIndexOf("/") + 1)
    map.set(key, `its adapter, or ${name}.off (@hostplane/core; providersOff has every provider in its off form)`)
  }
  for (const store of (areas as ReadonlyArray<AnyArea>).flatMap((area) => area.stores)) {
    map.set(
      store.key,
      "the stores of an adapter family: layer of @hostplane/adapters-pg on PgDatabase.layer(...), or layerMemory of @hostplane/testkit"
    )
  }
  return map
}

const notFound = /Service not found: (\S+)/

/**
 * The same failure with the layer that usually provides the missing port named, when a build failed for want of
 * one; any other failure as it was.
 */
export const explainMissingPort = (failure: unknown): unknown => {
  const found = notFound.exec(failure instanceof Error ? failure.message : "")
  const hint = found === null ? undefined : hints().get(found[1]!)
  return hint === undefined
    ? failure
    : new Error(`Service not found: ${found![1]}: a port the host provides, usually with ${hint}`, { cause: failure })
}
