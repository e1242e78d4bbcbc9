import { Context, Effect, Layer, Option } from "effect"
import { AlreadyMember, Forbidden, LastAdmin, NotFound, PersonalOrg, UserNotFound } from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { audited, Mutation } from "../kernel/Mutation.ts"
import { Policy } from "../kernel/Policy.ts"
import type { Role } from "../kernel/Role.ts"
import { forSubject } from "../kernel/Rule.ts"
import { memberRules } from "./MemberRules.ts"
import { UserStore } from "../identity/UserStore.ts"
import type { Member } from "./Org.ts"
import { OrgStore } from "./OrgStore.ts"
import { AuthCache, AuthChange } from "../identity/AuthCache.ts"
import type { OrgId, UserId } from "../kernel/Ids.ts"

/** Spec part 2: a personal org is a one-person org, so it takes no members and no invites. */
export const personalOrgStaysSolo = () =>
  new PersonalOrg({ message: "a personal organization has one member: create an organization to work with others" })

/** Membership rules of spec 4.2: an org always keeps at least one admin. */
export class Members extends Context.Service<
  Members,
  {
    readonly list: (actor: Actor, slug: string) => Effect.Effect<ReadonlyArray<Member>, NotFound | Forbidden>
    readonly add: (
      actor: Actor,
      slug: string,
      input: { readonly provider: string; readonly subject: string; readonly role: Role }
    ) => Effect.Effect<Member, NotFound | Forbidden | PersonalOrg | UserNotFound | AlreadyMember>
    readonly setRole: (
      actor: Actor,
      slug: string,
      userId: UserId,
      role: Role
    ) => Effect.Effect<Member, NotFound | Forbidden | LastAdmin>
    /** Removing someone else needs admin; removing yourself is leaving and needs only membership. */
    readonly remove: (
      actor: Actor,
      slug: string,
      userId: UserId
    ) => Effect.Effect<void, NotFound | Forbidden | LastAdmin>
  }
>()("@hostplane/core/orgs/Members") {
  static readonly layer = Layer.effect(
    Members,
    Effect.gen(function* () {
      const store = yield* OrgStore
      const users = yield* UserStore
      const policy = yield* Policy
      const mutation = yield* Mutation
      const cache = yield* AuthCache

      const findMember = Effect.fnUntraced(function* (orgId: OrgId, userId: UserId) {
        const members = yield* store.listMembers(orgId)
        const member = members.find((m) => m.userId === userId)
        if (member === undefined) return yield* new NotFound({ message: `member ${userId} not found` })
        return member
      })

      const list = Effect.fn("Members.list")(function* (actor: Actor, slug: string) {
        const { org } = yield* policy.require(actor, slug, memberRules.list)
        return yield* store.listMembers(org.id)
      })

      const add = Effect.fn("Members.add")(function* (
        actor: Actor,
        slug: string,
        input: { readonly provider: string; readonly subject: string; readonly role: Role }
      ) {
        const grant = yield* mutation.authorizeOrg(actor, slug, memberRules.add)
        if (grant.org.personal) return yield* personalOrgStaysSolo()
        const user = yield* users.findByIdentity(input.provider, input.subject)
        if (Option.isNone(user)) {
          return yield* new UserNotFound({ message: `no user ${input.provider}:${input.subject}` })
        }
        const member = yield* mutation.org(grant, ({ org, at }) =>
          Effect.gen(function* () {
            const added = yield* store.addMember(org.id, user.value.id, input.role, at)
            if (!added) return yield* new AlreadyMember({ message: "the user already is a member" })
            return audited(yield* findMember(org.id, user.value.id), {
              action: "member.add",
              target: user.value.id,
              data: { role: input.role }
            })
          })
        )
        yield* cache.changed(AuthChange.user(user.value.id))
        return member
      })

      const setRole = Effect.fn("Members.setRole")(function* (actor: Actor, slug: string, userId: UserId, role: Role) {
        const grant = yield* mutation.authorizeOrg(actor, slug, memberRules.setRole)
        // The org lock makes "count admins, then demote" atomic against a concurrent demotion.
        const changed = yield* mutation.org(grant, ({ org }) =>
          Effect.gen(function* () {
            const member = yield* findMember(org.id, userId)
            if (member.role === "admin" && role !== "admin" && (yield* store.countAdmins(org.id)) <= 1) {
              return yield* new LastAdmin({ message: "an organization needs at least one admin" })
            }
            yield* store.setRole(org.id, userId, role)
            return audited(
              { ...member, role },
              { action: "member.role", target: userId, data: { from: member.role, role } }
            )
          })
        )
        yield* cache.changed(AuthChange.user(userId))
        return changed
      })

      const remove = Effect.fn("Members.remove")(function* (actor: Actor, slug: string, userId: UserId) {
        const leaving = userId === actor.userId
        const grant = yield* mutation.authorizeOrg(actor, slug, forSubject(memberRules.remove, leaving))
        yield* mutation.org(grant, ({ org }) =>
          Effect.gen(function* () {
            const member = yield* findMember(org.id, userId)
            if (member.role === "admin" && (yield* store.countAdmins(org.id)) <= 1) {
              return yield* new LastAdmin({ message: "the last admin cannot leave or be removed" })
            }
            yield* store.removeMember(org.id, userId)
            return audited(undefined, { action: leaving ? "member.leave" : "member.remove", target: userId })
          })
        )
        yield* cache.changed(AuthChange.user(userId))
      })

      return Members.of({ list, add, setRole, remove })
    })
  )
}
