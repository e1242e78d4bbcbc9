import { Settings } from "../kernel/Settings.ts"
import { Context, Effect, Layer, Option } from "effect"
import { orgRules } from "./OrgRules.ts"
import {
  ActiveSubscription,
  BadRequest,
  Forbidden,
  NotFound,
  OrgNotEmpty,
  PersonalOrg,
  SlugTaken
} from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { audited, Mutation } from "../kernel/Mutation.ts"
import { nowIso } from "../kernel/Time.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { MailOutbox } from "../mail/Mail.ts"
import {
  type CreateOrgInput,
  type Org,
  type OrgMembership,
  type OrgRow,
  slugPattern,
  toDisplayName,
  toMembership,
  toOrg
} from "./Org.ts"
import { OrgHoldings, OrgSubscriptionCheck } from "./OrgHooks.ts"
import { OrgStore } from "./OrgStore.ts"
import { AuthCache, AuthChange, cachedMemberships } from "../identity/AuthCache.ts"
import { newId } from "../kernel/Ids.ts"
import type { UserId } from "../kernel/Ids.ts"

/** A slug derived from a display name: lowercase, dashes for everything else, at most 40 characters. */
export const slugFrom = (name: string): string => {
  const base = name
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/g, "")
  return slugPattern.test(base) ? base : "org"
}

/** Org lifecycle of spec 4.2: create, rename, delete; every method authorizes the caller first. */
export class Orgs extends Context.Service<
  Orgs,
  {
    readonly list: (actor: Actor) => Effect.Effect<ReadonlyArray<OrgMembership>>
    readonly create: (actor: Actor, input: typeof CreateOrgInput.Type) => Effect.Effect<Org, SlugTaken>
    /** The personal org made at a user's first sign-in, inside the caller's transaction. */
    readonly createPersonal: (userId: UserId, displayName: string) => Effect.Effect<OrgRow>
    readonly rename: (actor: Actor, slug: string, name: string) => Effect.Effect<OrgMembership, NotFound | Forbidden>
    readonly remove: (
      actor: Actor,
      slug: string,
      confirm: string
    ) => Effect.Effect<void, NotFound | Forbidden | BadRequest | PersonalOrg | OrgNotEmpty | ActiveSubscription>
  }
>()("@hostplane/core/orgs/Orgs") {
  static readonly layer = Layer.effect(
    Orgs,
    Effect.gen(function* () {
      const store = yield* OrgStore
      const mutation = yield* Mutation
      const tokens = yield* Tokens
      const outbox = yield* MailOutbox
      // Read once at construction: every registered area's holdings and subscription check, folded by the registry.
      const counters = yield* OrgHoldings
      const hasSubscription = yield* OrgSubscriptionCheck
      const cache = yield* AuthCache
      const { planLimits } = yield* Settings

      const list = Effect.fn("Orgs.list")(function* (actor: Actor) {
        const rows = yield* cachedMemberships(cache, actor.userId, store.membershipsOf(actor.userId))
        return rows.map((row) => toMembership(row.org, row.role, planLimits))
      })

      /** Inserts an org with `creatorId` as admin; a derived slug gets a random suffix until it is free. */
      const insertOrg = Effect.fnUntraced(function* (
        creatorId: UserId,
        input: { readonly name: string; readonly slug: string; readonly derived: boolean; readonly personal: boolean }
      ) {
        const createdAt = yield* nowIso
        let slug = input.slug
        for (let attempt = 0; ; attempt++) {
          const row: OrgRow = {
            id: yield* newId(tokens, "org"),
            slug,
            name: input.name,
            plan: "free",
            personal: input.personal,
            createdAt
          }
          const inserted = yield* store.insert(row).pipe(
            Effect.as(Option.some(row)),
            Effect.catchTag("SlugTaken", (error) =>
              input.derived && attempt < 8 ? Effect.succeed(Option.none<OrgRow>()) : Effect.fail(error)
            )
          )
          if (Option.isSome(inserted)) {
            yield* store.addMember(row.id, creatorId, "admin", createdAt)
            return row
          }
          const suffix =
            (yield* tokens.secret(6))
              .toLowerCase()
              .replace(/[^a-z0-9]/g, "")
              .slice(0, 5) || "x"
          slug = `${input.slug.slice(0, 34).replace(/-+$/, "")}-${suffix}`
        }
      })

      const create = Effect.fn("Orgs.create")(function* (actor: Actor, input: typeof CreateOrgInput.Type) {
        const name = input.name.trim()
        const row = yield* mutation.unlocked(actor, () =>
          Effect.map(
            insertOrg(actor.userId, {
              name,
              slug: input.slug ?? slugFrom(name),
              derived: input.slug === undefined,
              personal: false
            }),
            (org) => audited(org, { action: "org.create", orgId: org.id, target: org.slug })
          )
        )
        yield* cache.changed(AuthChange.user(actor.userId))
        return toOrg(row)
      })

      const createPersonal = (userId: UserId, displayName: string) => {
        // A profile name is whatever the identity provider says: it becomes a display name the API would accept.
        const name = toDisplayName(displayName, "Personal")
        return insertOrg(userId, { name, slug: slugFrom(name), derived: true, personal: true }).pipe(Effect.orDie)
      }

      const rename = Effect.fn("Orgs.rename")(function* (actor: Actor, slug: string, name: string) {
        const grant = yield* mutation.authorizeOrg(actor, slug, orgRules.rename)
        const renamed = yield* mutation.org(grant, ({ org, role }) =>
          Effect.map(store.rename(org.id, name.trim()), (row) =>
            audited(toMembership(row, role, planLimits), {
              action: "org.rename",
              target: row.slug,
              data: { name: row.name }
            })
          )
        )
        yield* cache.changed(AuthChange.org(grant.org.id))
        return renamed
      })

      const remove = Effect.fn("Orgs.remove")(function* (actor: Actor, slug: string, confirm: string) {
        const grant = yield* mutation.authorizeOrg(actor, slug, orgRules.remove)
        if (confirm.trim() !== grant.org.slug) {
          return yield* new BadRequest({ message: "confirm must equal the organization slug" })
        }
        if (grant.org.personal) {
          return yield* new PersonalOrg({ message: "a personal organization cannot be deleted" })
        }
        yield* mutation.org(grant, ({ org }) =>
          Effect.gen(function* () {
            const holdings: Record<string, { count: number; names: ReadonlyArray<string> }> = {}
            for (const counter of counters) {
              const holding = yield* counter.count(org.id)
              if (holding.count > 0) holdings[counter.kind] = { count: holding.count, names: holding.names.slice(0, 5) }
            }
            if (Object.keys(holdings).length > 0) {
              return yield* new OrgNotEmpty({
                message: `the organization still holds ${Object.keys(holdings).join(", ")}`,
                details: { holdings }
              })
            }
            if (yield* hasSubscription(org.id)) {
              return yield* new ActiveSubscription({ message: "cancel the paid subscription first" })
            }
            // Invitation links of a deleted org would only lead to 404: drop their unsent mail with the org.
            for (const invite of yield* store.listOpenInvites(org.id)) {
              if (invite.mailId !== null) yield* outbox.cancel(invite.mailId)
            }
            yield* store.remove(org.id)
            return audited(undefined, { action: "org.delete", target: org.slug })
          })
        )
        yield* cache.changed(AuthChange.org(grant.org.id))
      })

      return Orgs.of({ list, create, createPersonal, rename, remove })
    })
  )
}
