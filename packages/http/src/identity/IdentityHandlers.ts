import { Identity, Kernel } from "@hostplane/core"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { ApiWithDevAuth } from "../Api.ts"
import { noStore } from "../server/NoStore.ts"

export const IdentityHandlers = HttpApiBuilder.group(
  ApiWithDevAuth,
  "identity",
  Effect.fn(function* (handlers) {
    const identity = yield* Identity.Identity
    return handlers.handleAll({
      config: () => identity.config,
      me: () => Effect.flatMap(Effect.service(Kernel.CurrentActor), identity.me),
      idpStart: ({ query }) =>
        Effect.map(identity.startIdp(query.redirect), (url) => HttpServerResponse.redirect(url, { status: 302 })),
      idpCallback: ({ query }) =>
        Effect.map(identity.finishIdp(query), (url) =>
          HttpServerResponse.redirect(url, { status: 302, headers: { "cache-control": "no-store" } })
        )
    })
  })
)

export const DevAuthHandlers = HttpApiBuilder.group(
  ApiWithDevAuth,
  "devAuth",
  Effect.fn(function* (handlers) {
    const identity = yield* Identity.Identity
    return handlers.handleAll({ login: ({ payload }) => Effect.map(identity.devLogin(payload), noStore) })
  })
)
