import { Effect, Layer, Option } from "effect"
import { HostedZones } from "../hostnames/HostedZones.ts"
import { canonicalHost } from "../kernel/HostName.ts"
import type { ZoneRow } from "./Zone.ts"
import { ZoneStore } from "./ZoneStore.ts"

/** TTL of the managed record of a custom hostname: short, so a later change of the fallback origin spreads fast. */
const managedHostTtl = 300

/** The most specific stored zone containing `host` (its apex included). */
const zoneOf = Effect.fnUntraced(function* (store: ZoneStore["Service"], host: string) {
  const name = canonicalHost(host)
  const containing = (yield* store.related(name)).filter((zone) => name === zone.name || name.endsWith(`.${zone.name}`))
  const best = containing.reduce<ZoneRow | undefined>(
    (found, zone) => (found === undefined || zone.name.length > found.name.length ? zone : found),
    undefined
  )
  return best === undefined ? Option.none() : Option.some({ zone: best, name })
})

/** The owner name of `host` relative to `zone` (never the apex here). */
const ownerIn = (zone: string, host: string) => host.slice(0, host.length - zone.length - 1)

/**
 * `HostedZones` from the DNS area's zones: a custom hostname inside a zone of the same org verifies by zone, and gets
 * a managed CNAME to the fallback origin that its delete removes. Both writes run in the hostname's transaction.
 */
export const layer: Layer.Layer<HostedZones, never, ZoneStore> = Layer.effect(
  HostedZones,
  Effect.gen(function* () {
    const store = yield* ZoneStore
    return HostedZones.of({
      ownerOrgOf: (host) =>
        Effect.map(
          zoneOf(store, host),
          Option.map(({ zone }) => zone.orgId as string)
        ),
      link: Effect.fnUntraced(function* (host, orgId, target, at) {
        const found = yield* zoneOf(store, host)
        if (Option.isNone(found) || found.value.zone.orgId !== orgId) return
        const { zone, name } = found.value
        if (name === zone.name) return
        const owner = ownerIn(zone.name, name)
        if ((yield* store.rrsets(zone.name)).some((row) => row.name === owner)) return
        const absolute = canonicalHost(target) + "."
        yield* store.putRrset(zone.name, {
          name: owner,
          type: "CNAME",
          ttl: managedHostTtl,
          records: [absolute],
          managed: true
        })
        yield* store.touch(zone.name, at)
      }),
      unlink: Effect.fnUntraced(function* (host, at) {
        const found = yield* zoneOf(store, host)
        if (Option.isNone(found)) return
        const { zone, name } = found.value
        const owner = ownerIn(zone.name, name)
        const kept = (yield* store.rrsets(zone.name)).some(
          (row) => row.name === owner && row.type === "CNAME" && row.managed === true
        )
        if (!kept) return
        yield* store.removeRrset(zone.name, owner, "CNAME")
        yield* store.touch(zone.name, at)
      })
    })
  })
)
