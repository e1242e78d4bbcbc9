import { Context, Effect, Layer, Schema } from "effect"
import type { Forbidden, NotFound } from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { Policy } from "../kernel/Policy.ts"
import type { Notification } from "./Org.ts"
import { OrgStore } from "./OrgStore.ts"

export const defaultPageSize = 50
export const maxPageSize = 200

/** Query `limit` of every paged list: an integer 1..200 as text; anything else is 400, never clamped or a 500. */
export const PageLimit = Schema.FiniteFromString.check(
  Schema.isInt(),
  Schema.isBetween({ minimum: 1, maximum: maxPageSize })
)

/** Clamps a requested page size to 1..200, 50 when absent. */
export const pageSize = (limit: number | undefined): number =>
  limit === undefined ? defaultPageSize : Math.min(Math.max(Math.trunc(limit), 1), maxPageSize)

/** The org's limit, backup and restore notices, newest first. */
export class Notifications extends Context.Service<
  Notifications,
  {
    readonly list: (
      actor: Actor,
      slug: string,
      limit: number | undefined
    ) => Effect.Effect<ReadonlyArray<Notification>, NotFound | Forbidden>
  }
>()("@hostplane/core/orgs/Notifications") {
  static readonly layer = Layer.effect(
    Notifications,
    Effect.gen(function* () {
      const store = yield* OrgStore
      const policy = yield* Policy
      const list = Effect.fn("Notifications.list")(function* (actor: Actor, slug: string, limit: number | undefined) {
        const { org } = yield* policy.require(actor, slug, "viewer")
        return yield* store.listNotifications(org.id, pageSize(limit))
      })
      return Notifications.of({ list })
    })
  )
}
