import { Domains, Errors } from "@hostplane/core"
import { Effect, Layer } from "effect"

/** A held `ensure`: `entered` once a call waits at it, `release` lets it go on. */
export interface ZoneGate {
  readonly entered: Promise<void>
  readonly release: () => void
}

/**
 * `DomainZones` in process, in place of the DNS area's zones: records each zone's org and refuses a name another
 * org's zone holds or covers (a parent or a child) with `ZoneTaken`. `failNext` makes the next call die (a store
 * outage); `block` holds the next call until released (to stop a saga between its steps).
 */
export const make = () => {
  const zones = new Map<string, string>()
  let failing = 0
  const gates: Array<{ readonly gate: ZoneGate; readonly opened: Promise<void>; readonly enter: () => void }> = []
  const related = (a: string, b: string) => a === b || a.endsWith(`.${b}`) || b.endsWith(`.${a}`)
  const ensure = ({ orgId, name }: { readonly orgId: string; readonly name: string }) =>
    Effect.suspend(() => {
      if (failing > 0) {
        failing--
        return Effect.die(new Error("the zone store is unreachable"))
      }
      const other = [...zones].find(([zone, owner]) => owner !== orgId && related(zone, name))
      if (other !== undefined) {
        return Effect.fail(new Errors.ZoneTaken({ message: `the zone ${other[0]} belongs to another organization` }))
      }
      zones.set(name, orgId)
      return Effect.void
    })
  const service = Domains.DomainZones.of({
    enabled: Effect.void,
    ensure: (input) =>
      Effect.suspend(() => {
        const held = gates.shift()
        if (held === undefined) return ensure(input)
        held.enter()
        return Effect.andThen(
          Effect.promise(() => held.opened),
          ensure(input)
        )
      })
  })
  return {
    zones,
    layer: Layer.succeed(Domains.DomainZones, service),
    failNext: () => void failing++,
    block: (): ZoneGate => {
      let enter!: () => void
      let release!: () => void
      const entered = new Promise<void>((resolve) => (enter = resolve))
      const opened = new Promise<void>((resolve) => (release = resolve))
      const gate = { entered, release }
      gates.push({ gate, opened, enter })
      return gate
    }
  }
}
