import { Access, Kernel } from "@hostplane/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { AccessApi } from "@hostplane/api/access/AccessApi"
import { noStore } from "@hostplane/api/server/NoStore"

const api = areaApi(AccessApi)

const actor = Effect.service(Kernel.CurrentActor)

export const AccessHandlers = HttpApiBuilder.group(
  api,
  "access",
  Effect.fn(function* (handlers) {
    const policies = yield* Access.AccessPolicies
    return handlers.handleAll({
      get: ({ params }) => Effect.flatMap(actor, (a) => policies.get(a, params.orgSlug, params.projectName)),
      set: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => policies.set(a, params.orgSlug, params.projectName, payload)),
      newBypass: ({ params }) =>
        Effect.flatMap(actor, (a) => Effect.map(policies.newBypass(a, params.orgSlug, params.projectName), noStore)),
      revokeBypass: ({ params }) =>
        Effect.flatMap(actor, (a) => policies.revokeBypass(a, params.orgSlug, params.projectName)),
      authorize: ({ payload }) => Effect.flatMap(actor, (a) => Effect.map(policies.authorize(a, payload), noStore))
    })
  })
)
