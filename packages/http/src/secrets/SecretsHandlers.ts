import { Kernel, Secrets } from "@hostplane/core"
import { Effect, Redacted } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { SecretsApi } from "@hostplane/api/secrets/SecretsApi"

const api = areaApi(SecretsApi)

const actor = Effect.service(Kernel.CurrentActor)

export const SecretsHandlers = HttpApiBuilder.group(
  api,
  "secrets",
  Effect.fn(function* (handlers) {
    const secrets = yield* Secrets.Secrets
    return handlers.handleAll({
      list: ({ params }) =>
        Effect.flatMap(actor, (a) => secrets.list(a, params.orgSlug, params.projectName)).pipe(
          Effect.map((items) => ({ items }))
        ),
      put: ({ params, payload }) =>
        Effect.flatMap(actor, (a) =>
          secrets.put(a, params.orgSlug, params.projectName, params.secretName, Redacted.make(payload.value))
        ),
      remove: ({ params }) =>
        Effect.flatMap(actor, (a) => secrets.remove(a, params.orgSlug, params.projectName, params.secretName))
    })
  })
)
