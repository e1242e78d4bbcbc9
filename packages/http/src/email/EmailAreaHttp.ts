import { Email, Kernel } from "@hostplane/core"
import { Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import { addonAreaHttp } from "../addons/AddonAreaHttp.ts"
import { areaHttp } from "../Area.ts"
import { EmailAddonApi, MailHooksApi, MailRelayApi } from "@hostplane/api/email/EmailApi"
import { EmailHandlers } from "./EmailHandlers.ts"

const actor = Effect.service(Kernel.CurrentActor)

const addon = addonAreaHttp(Email.emailAddon, {
  group: EmailAddonApi,
  handle: (handlers) =>
    Effect.map(Effect.service(Email.EmailLog), (log) =>
      handlers
        .handle("log", ({ params, query }) =>
          Effect.flatMap(actor, (a) =>
            log.list(a, params.orgSlug, params.projectName, {
              direction: query.direction,
              cursor: query.cursor,
              limit: query.limit
            })
          )
        )
        .handle("logEntry", ({ params }) =>
          Effect.flatMap(actor, (a) => log.get(a, params.orgSlug, params.projectName, params.mailId))
        )
        .handle("logRaw", ({ params }) =>
          Effect.flatMap(actor, (a) => log.raw(a, params.orgSlug, params.projectName, params.mailId)).pipe(
            Effect.map(({ id, bytes }) =>
              HttpServerResponse.uint8Array(bytes, {
                contentType: "message/rfc822",
                headers: { "content-disposition": `attachment; filename="${id}.eml"` }
              })
            )
          )
        )
    ),
  routes: [
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/email/log",
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/email/log/{mailId}",
    "GET /v1/orgs/{orgSlug}/projects/{projectName}/email/log/{mailId}/raw"
  ]
})

export const EmailAreaHttp = areaHttp({
  name: "email",
  groups: [MailHooksApi, MailRelayApi, ...addon.groups],
  handlers: Layer.merge(EmailHandlers, addon.handlers),
  routes: ["POST /v1/hooks/mailer", "POST /v1/node/mail/send", ...addon.routes]
})
