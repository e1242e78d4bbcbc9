import { Domains, Kernel } from "@hostplane/core"
import { Effect, Redacted } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { HttpServerResponse } from "effect/http"
import { areaApi } from "../Area.ts"
import { noStore } from "@hostplane/api/server/NoStore"
import { DomainsApi } from "@hostplane/api/domains/DomainsApi"

const api = areaApi(DomainsApi)

const actor = Effect.service(Kernel.CurrentActor)

/** A new domain answers 201, one that existed (finished, imported) 200. */
const created = ({ domain, created }: Domains.Purchased) =>
  HttpServerResponse.jsonUnsafe(domain, { status: created ? 201 : 200 })

export const DomainsHandlers = HttpApiBuilder.group(
  api,
  "domains",
  Effect.fn(function* (handlers) {
    const domains = yield* Domains.Domains
    return handlers.handleAll({
      list: ({ params }) =>
        Effect.flatMap(actor, (a) => domains.list(a, params.orgSlug)).pipe(Effect.map((items) => ({ items }))),
      purchase: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => domains.purchase(a, params.orgSlug, payload)).pipe(Effect.map(created)),
      check: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => domains.check(a, params.orgSlug, payload.names)).pipe(
          Effect.map((items) => ({ items }))
        ),
      import: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => domains.import(a, params.orgSlug, payload.name)).pipe(Effect.map(created)),
      get: ({ params }) => Effect.flatMap(actor, (a) => domains.get(a, params.orgSlug, params.name)),
      renew: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => domains.renew(a, params.orgSlug, params.name, payload.years)),
      autoRenew: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => domains.setAutoRenew(a, params.orgSlug, params.name, payload.autoRenew)),
      lock: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => domains.setLock(a, params.orgSlug, params.name, payload.locked)),
      authCode: ({ params }) =>
        Effect.flatMap(actor, (a) => domains.authCode(a, params.orgSlug, params.name)).pipe(
          Effect.map((code) => noStore({ authCode: Redacted.value(code) }))
        ),
      sync: ({ params }) => Effect.flatMap(actor, (a) => domains.sync(a, params.orgSlug, params.name))
    })
  })
)
