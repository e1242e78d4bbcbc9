import { Ai, Kernel } from "@hostplane/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { AiCreditApi } from "@hostplane/api/ai/AiApi"

const api = areaApi(AiCreditApi)

const actor = Effect.service(Kernel.CurrentActor)

export const AiHandlers = HttpApiBuilder.group(
  api,
  "aiCredit",
  Effect.fn(function* (handlers) {
    const credits = yield* Ai.Credits
    const models = { items: (yield* Ai.AiCatalog).models }
    return handlers.handleAll({
      models: () => Effect.succeed(models),
      credit: ({ params }) => Effect.flatMap(actor, (a) => credits.credit(a, params.orgSlug)),
      ledger: ({ params, query }) => Effect.flatMap(actor, (a) => credits.ledger(a, params.orgSlug, query)),
      checkout: ({ params, payload }) => Effect.flatMap(actor, (a) => credits.checkout(a, params.orgSlug, payload)),
      autotopup: ({ params, payload }) => Effect.flatMap(actor, (a) => credits.setAutoTopup(a, params.orgSlug, payload))
    })
  })
)
