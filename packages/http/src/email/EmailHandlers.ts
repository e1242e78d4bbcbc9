import { Email, Errors, Node } from "@hostplane/core"
import { Effect, Layer, Stream } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { MailHooksApi, MailRelayApi } from "@hostplane/api/email/EmailApi"

const api = areaApi(MailHooksApi, MailRelayApi)

/** The token of `Bearer <token>`; anything else is no token. */
const bearer = (header: string | undefined): string | undefined =>
  header === undefined ? undefined : /^Bearer (\S+)$/.exec(header)?.[1]

const declaredLength = (value: string | undefined) =>
  value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined

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

const relay = HttpApiBuilder.group(
  api,
  "mailRelay",
  Effect.fn(function* (handlers) {
    const nodes = yield* Node.Nodes
    const mailRelay = yield* Email.MailRelay
    return handlers.handle("send", ({ headers, request }) =>
      Effect.andThen(
        nodes.authorize(bearer(headers.authorization)),
        mailRelay.send(
          headers["x-project-id"],
          // Read from the request: a body that breaks off is a 400, not the framework's defect.
          request.stream.pipe(Stream.mapError(() => new Errors.BadRequest({ message: "the body broke off" }))),
          declaredLength(request.headers["content-length"])
        )
      )
    )
  })
)

export const EmailHandlers = Layer.merge(hooks, relay)
