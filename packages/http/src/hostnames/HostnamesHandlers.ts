import { Hostnames, Kernel } from "@hostplane/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { HostnamesApi } from "@hostplane/api/hostnames/HostnamesApi"

const api = areaApi(HostnamesApi)

const actor = Effect.service(Kernel.CurrentActor)

export const HostnamesHandlers = HttpApiBuilder.group(
  api,
  "hostnames",
  Effect.fn(function* (handlers) {
    const hostnames = yield* Hostnames.Hostnames
    return handlers.handleAll({
      list: ({ params }) =>
        Effect.flatMap(actor, (a) => hostnames.list(a, params.orgSlug, params.projectName)).pipe(
          Effect.map((items) => ({ items }))
        ),
      add: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => hostnames.add(a, params.orgSlug, params.projectName, payload.name)),
      remove: ({ params }) =>
        Effect.flatMap(actor, (a) => hostnames.remove(a, params.orgSlug, params.projectName, params.host)),
      verify: ({ params }) =>
        Effect.flatMap(actor, (a) => hostnames.verify(a, params.orgSlug, params.projectName, params.host)),
      retryTls: ({ params }) =>
        Effect.flatMap(actor, (a) => hostnames.retryTls(a, params.orgSlug, params.projectName, params.host))
    })
  })
)
