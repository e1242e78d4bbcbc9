import { Context, Effect, Layer, Option } from "effect"
import { inviteRules } from "./InviteRules.ts"
import {
  AlreadyMember,
  Forbidden,
  InviteExpired,
  InviteRevoked,
  InviteUsed,
  NotFound,
  PersonalOrg,
  TooManyInvites
} from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { audited, Mutation } from "../kernel/Mutation.ts"
import { Policy } from "../kernel/Policy.ts"
import type { Role } from "../kernel/Role.ts"
import { Settings } from "../kernel/Settings.ts"
import { MailConfig } from "../mail/MailConfig.ts"
import { InvitesConfig } from "./InvitesConfig.ts"
import { isoPlus, nowIso } from "../kernel/Time.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { MailOutbox } from "../mail/Mail.ts"
import { mailQueue } from "../mail/SendMail.ts"
import {
  type AcceptedInvite,
  type Invite,
  type InviteRow,
  type InviteState,
  type InviteView,
  type OrgRow,
  toMembership
} from "./Org.ts"
import { personalOrgStaysSolo } from "./Members.ts"
import { OrgStore } from "./OrgStore.ts"
import { AuthCache, AuthChange } from "../identity/AuthCache.ts"
import type { InviteId } from "../kernel/Ids.ts"
import { newId } from "../kernel/Ids.ts"

/** Pending invites an org may hold at once (decisions.md part 3). */
export const maxPendingInvites = 50

/** The state a reader sees: a pending invite past its expiry is `expired`. */
export const stateOf = (invite: InviteRow, now: string): InviteState =>
  invite.state === "pending" && invite.expiresAt <= now ? "expired" : invite.state

const toInvite = (invite: InviteRow, now: string): Invite => ({
  inviteId: invite.id,
  email: invite.email,
  role: invite.role,
  state: stateOf(invite, now),
  expiresAt: invite.expiresAt,
  sentAt: invite.sentAt,
  createdAt: invite.createdAt
})

/** Invitation rules of spec 4.2 and part 3: single use, 7 days, the token travels only by email. */
export class Invites extends Context.Service<
  Invites,
  {
    readonly list: (actor: Actor, slug: string) => Effect.Effect<ReadonlyArray<Invite>, NotFound | Forbidden>
    /** `created` is false when an open invite for the address was renewed instead. */
    readonly create: (
      actor: Actor,
      slug: string,
      input: { readonly email: string; readonly role: Role }
    ) => Effect.Effect<
      { readonly invite: Invite; readonly created: boolean },
      NotFound | Forbidden | PersonalOrg | AlreadyMember | TooManyInvites
    >
    readonly revoke: (actor: Actor, slug: string, inviteId: InviteId) => Effect.Effect<void, NotFound | Forbidden>
    readonly view: (token: string) => Effect.Effect<InviteView, NotFound>
    readonly accept: (
      actor: Actor,
      token: string
    ) => Effect.Effect<AcceptedInvite, NotFound | PersonalOrg | InviteUsed | InviteRevoked | InviteExpired>
  }
>()("@hostplane/core/orgs/Invites") {
  static readonly layer = Layer.effect(
    Invites,
    Effect.gen(function* () {
      const store = yield* OrgStore
      const policy = yield* Policy
      const mutation = yield* Mutation
      const cache = yield* AuthCache
      const tokens = yield* Tokens
      const outbox = yield* MailOutbox
      const enqueueMail = yield* mailQueue
      const settings = yield* Settings
      const { mailFrom } = yield* MailConfig
      const { inviteTtl } = yield* InvitesConfig

      const list = Effect.fn("Invites.list")(function* (actor: Actor, slug: string) {
        const { org } = yield* policy.require(actor, slug, inviteRules.list)
        const now = yield* nowIso
        return (yield* store.listOpenInvites(org.id)).map((invite) => toInvite(invite, now))
      })

      const queueMail = Effect.fnUntraced(function* (
        org: OrgRow,
        email: string,
        role: Role,
        token: string,
        now: string
      ) {
        const id = yield* tokens.id("mail")
        const link = `${settings.publicUrl}/invites/${token}`
        yield* enqueueMail(
          {
            id,
            from: mailFrom,
            to: email,
            subject: `You are invited to ${org.name} on ${settings.productName}`,
            text: [
              `You have been invited to join ${org.name} as ${role}.`,
              "",
              `Accept the invitation: ${link}`,
              "",
              `The link is valid for 7 days and can be used once.`
            ].join("\n")
          },
          now
        )
        return id
      })

      const create = Effect.fn("Invites.create")(function* (
        actor: Actor,
        slug: string,
        input: { readonly email: string; readonly role: Role }
      ) {
        const grant = yield* mutation.authorizeOrg(actor, slug, inviteRules.create)
        if (grant.org.personal) return yield* personalOrgStaysSolo()
        const email = input.email.trim().toLowerCase()
        return yield* mutation.org(grant, ({ org, at: now }) =>
          Effect.gen(function* () {
            const members = yield* store.listMembers(org.id)
            if (members.some((m) => m.email !== null && m.email.toLowerCase() === email)) {
              return yield* new AlreadyMember({ message: "someone with this address already is a member" })
            }
            const token = yield* tokens.secret(32)
            const tokenHash = yield* tokens.hash(token)
            const expiresAt = isoPlus(now, inviteTtl)
            const existing = yield* store.findOpenInvite(org.id, email)
            let row: Omit<InviteRow, "sentAt">
            // A new row, or an expired one coming back to life, counts against the pending limit.
            if (Option.isNone(existing) || stateOf(existing.value, now) === "expired") {
              const open = yield* store.listOpenInvites(org.id)
              if (open.filter((invite) => stateOf(invite, now) === "pending").length >= maxPendingInvites) {
                return yield* new TooManyInvites({
                  message: `an organization may hold at most ${maxPendingInvites} pending invites`,
                  details: { limit: maxPendingInvites }
                })
              }
            }
            if (Option.isSome(existing)) {
              if (existing.value.mailId !== null) yield* outbox.cancel(existing.value.mailId)
              row = {
                ...existing.value,
                role: input.role,
                tokenHash,
                expiresAt,
                mailId: yield* queueMail(org, email, input.role, token, now)
              }
              yield* store.updateInvite(row)
            } else {
              row = {
                id: yield* newId(tokens, "inv"),
                orgId: org.id,
                email,
                role: input.role,
                tokenHash,
                state: "pending",
                expiresAt,
                mailId: yield* queueMail(org, email, input.role, token, now),
                createdAt: now
              }
              yield* store.insertInvite(row)
            }
            return audited(
              { invite: toInvite({ ...row, sentAt: null }, now), created: Option.isNone(existing) },
              { action: "member.invite", target: row.id, data: { role: input.role, renewed: Option.isSome(existing) } }
            )
          })
        )
      })

      const revoke = Effect.fn("Invites.revoke")(function* (actor: Actor, slug: string, inviteId: InviteId) {
        const grant = yield* mutation.authorizeOrg(actor, slug, inviteRules.revoke)
        yield* mutation.org(grant, ({ org }) =>
          Effect.gen(function* () {
            const invite = yield* store.findInvite(org.id, inviteId)
            if (Option.isNone(invite) || invite.value.state !== "pending") {
              return yield* new NotFound({ message: `invite ${inviteId} not found` })
            }
            yield* store.setInviteState(invite.value.id, "revoked")
            if (invite.value.mailId !== null) yield* outbox.cancel(invite.value.mailId)
            return audited(undefined, { action: "member.uninvite", target: invite.value.id })
          })
        )
      })

      const findByToken = Effect.fnUntraced(function* (token: string) {
        const invite = yield* store.findInviteByToken(yield* tokens.hash(token))
        const org = Option.isSome(invite) ? yield* store.findById(invite.value.orgId) : Option.none()
        if (Option.isNone(invite) || Option.isNone(org)) {
          return yield* new NotFound({ message: "invite not found" })
        }
        return { invite: invite.value, org: org.value }
      })

      const view = Effect.fn("Invites.view")(function* (token: string) {
        const { invite, org } = yield* findByToken(token)
        return {
          orgName: org.name,
          orgSlug: org.slug,
          role: invite.role,
          state: stateOf(invite, yield* nowIso),
          expiresAt: invite.expiresAt
        }
      })

      const accept = Effect.fn("Invites.accept")(function* (actor: Actor, token: string) {
        const found = yield* findByToken(token)
        const accepted = yield* mutation.lockedOrg(actor, found.org.id, (now) =>
          Effect.gen(function* () {
            // Read again under the lock so two accepts of one token cannot both succeed.
            const { invite, org } = yield* findByToken(token)
            switch (stateOf(invite, now)) {
              case "accepted":
                return yield* new InviteUsed({ message: "this invite was already used" })
              case "revoked":
                return yield* new InviteRevoked({ message: "this invite was revoked" })
              case "expired":
                return yield* new InviteExpired({ message: "this invite has expired" })
            }
            // An invite a personal org held before it was refused at creation still cannot add a second person.
            if (org.personal && Option.isNone(yield* store.findMembership(org.id, actor.userId))) {
              return yield* personalOrgStaysSolo()
            }
            const added = yield* store.addMember(org.id, actor.userId, invite.role, now)
            yield* store.setInviteState(invite.id, "accepted")
            const role = Option.getOrElse(yield* store.findMembership(org.id, actor.userId), () => invite.role)
            return audited(
              { org: toMembership(org, role, settings.planLimits), alreadyMember: !added },
              { action: "member.accept", target: invite.id, data: { role, alreadyMember: !added } }
            )
          })
        )
        yield* cache.changed(AuthChange.user(actor.userId))
        return accepted
      })

      return Invites.of({ list, create, revoke, view, accept })
    })
  )
}
