import { Kernel, Orgs } from "@hostplane/core"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { InvitesApi, MembersApi, OrgsApi } from "@hostplane/api/orgs/OrgsApi"

const api = areaApi(OrgsApi, MembersApi, InvitesApi)

const actor = Effect.service(Kernel.CurrentActor)

export const OrgsHandlers = HttpApiBuilder.group(
  api,
  "orgs",
  Effect.fn(function* (handlers) {
    const orgs = yield* Orgs.Orgs
    const notifications = yield* Orgs.Notifications
    return handlers.handleAll({
      list: () =>
        actor.pipe(
          Effect.flatMap(orgs.list),
          Effect.map((items) => ({ items }))
        ),
      create: ({ payload }) => Effect.flatMap(actor, (a) => orgs.create(a, payload)),
      rename: ({ params, payload }) => Effect.flatMap(actor, (a) => orgs.rename(a, params.orgSlug, payload.name)),
      remove: ({ params, payload }) => Effect.flatMap(actor, (a) => orgs.remove(a, params.orgSlug, payload.confirm)),
      notifications: ({ params, query }) =>
        Effect.flatMap(actor, (a) => notifications.list(a, params.orgSlug, query.limit, query.cursor))
    })
  })
)

export const MembersHandlers = HttpApiBuilder.group(
  api,
  "members",
  Effect.fn(function* (handlers) {
    const members = yield* Orgs.Members
    return handlers.handleAll({
      list: ({ params }) =>
        Effect.flatMap(actor, (a) => members.list(a, params.orgSlug)).pipe(Effect.map((items) => ({ items }))),
      add: ({ params, payload }) => Effect.flatMap(actor, (a) => members.add(a, params.orgSlug, payload)),
      setRole: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => members.setRole(a, params.orgSlug, params.userId, payload.role)),
      remove: ({ params }) => Effect.flatMap(actor, (a) => members.remove(a, params.orgSlug, params.userId))
    })
  })
)

export const InvitesHandlers = HttpApiBuilder.group(
  api,
  "invites",
  Effect.fn(function* (handlers) {
    const invites = yield* Orgs.Invites
    return handlers.handleAll({
      list: ({ params }) =>
        Effect.flatMap(actor, (a) => invites.list(a, params.orgSlug)).pipe(Effect.map((items) => ({ items }))),
      // A renewed invite answers 200, a new one 201 (spec 4.2).
      create: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => invites.create(a, params.orgSlug, payload)).pipe(
          Effect.map(({ invite, created }) => HttpServerResponse.jsonUnsafe(invite, { status: created ? 201 : 200 }))
        ),
      revoke: ({ params }) => Effect.flatMap(actor, (a) => invites.revoke(a, params.orgSlug, params.inviteId)),
      view: ({ params }) => invites.view(params.token),
      accept: ({ params }) => Effect.flatMap(actor, (a) => invites.accept(a, params.token))
    })
  })
)
