import { Dns, Kernel } from "@hostplane/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { DnsApi } from "@hostplane/api/dns/DnsApi"

const api = areaApi(DnsApi)

const actor = Effect.service(Kernel.CurrentActor)

export const DnsHandlers = HttpApiBuilder.group(
  api,
  "dns",
  Effect.fn(function* (handlers) {
    const zones = yield* Dns.Zones
    return handlers.handleAll({
      list: ({ params }) =>
        Effect.flatMap(actor, (a) => zones.list(a, params.orgSlug)).pipe(Effect.map((items) => ({ items }))),
      create: ({ params, payload }) => Effect.flatMap(actor, (a) => zones.create(a, params.orgSlug, payload.name)),
      get: ({ params }) => Effect.flatMap(actor, (a) => zones.get(a, params.orgSlug, params.zone)),
      remove: ({ params }) => Effect.flatMap(actor, (a) => zones.remove(a, params.orgSlug, params.zone)),
      putRrset: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => zones.putRrset(a, params.orgSlug, params.zone, params.name, params.type, payload)),
      removeRrset: ({ params }) =>
        Effect.flatMap(actor, (a) => zones.removeRrset(a, params.orgSlug, params.zone, params.name, params.type)),
      dnssec: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => zones.setDnssec(a, params.orgSlug, params.zone, payload.enabled)),
      putDs: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => zones.putDs(a, params.orgSlug, params.zone, payload.ds))
    })
  })
)
