import { Email } from "@hostplane/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { MailHooksApi } from "./EmailApi.ts"

const api = areaApi(MailHooksApi)

const hooks = HttpApiBuilder.group(
  api,
  "mailHooks",
  Effect.fn(function* (handlers) {
    const mailHooks = yield* Email.MailHooks
    return handlers.handle("mailer", ({ payload }) =>
      Effect.as(mailHooks.receive(payload), { received: true as const })
    )
  })
)

export const EmailHandlers = hooks
