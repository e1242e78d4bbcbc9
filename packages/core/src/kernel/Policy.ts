import { Context, Effect, Layer, Option } from "effect"
import { Forbidden, NotFound } from "../errors/Errors.ts"
import type { OrgRow } from "../orgs/Org.ts"
import { OrgStore } from "../orgs/OrgStore.ts"
import type { Actor } from "./Actor.ts"
import { atLeast, type Role } from "./Role.ts"

export interface Membership {
  readonly org: OrgRow
  readonly role: Role
}

/** The one authorization rule: outsiders and foreign names get 404, a role below the minimum gets 403. */
export class Policy extends Context.Service<
  Policy,
  {
    readonly require: (actor: Actor, orgSlug: string, minimum: Role) => Effect.Effect<Membership, NotFound | Forbidden>
  }
>()("@hostplane/core/kernel/Policy") {
  static readonly layer = Layer.effect(
    Policy,
    Effect.gen(function* () {
      const orgs = yield* OrgStore
      const require = Effect.fn("Policy.require")(function* (actor: Actor, orgSlug: string, minimum: Role) {
        const org = yield* orgs.findBySlug(orgSlug)
        const role = Option.isSome(org) ? yield* orgs.findMembership(org.value.id, actor.userId) : Option.none()
        if (Option.isNone(org) || Option.isNone(role)) {
          return yield* new NotFound({ message: `organization ${orgSlug} not found` })
        }
        if (!atLeast(role.value, minimum)) {
          return yield* new Forbidden({ message: `this needs the ${minimum} role or higher` })
        }
        return { org: org.value, role: role.value }
      })
      return Policy.of({ require })
    })
  )
}
