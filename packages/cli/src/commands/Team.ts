import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { show, table } from "../Output.ts"
import { resolveOrg, root, type Session, session } from "../Root.ts"
import { pick } from "./Account.ts"

const roles = ["admin", "member", "viewer"] as const
const roleArgument = Argument.Literals("role", roles).pipe(Argument.withDescription("admin, member or viewer"))

/** The signed-in client and the org: `--org`, else the folder's link, else your only or personal org. */
const orgSession = Effect.gen(function* () {
  const flags = yield* root
  const signedIn = yield* session(flags)
  const orgSlug = yield* resolveOrg(flags, ".", signedIn)
  return { flags, api: signedIn.api, orgSlug }
})

// members -----------------------------------------------------------------------------------------------------

const memberRef = Argument.String("member").pipe(
  Argument.withDescription("The member's subject (as `members list` shows it), email or user id")
)

/** A member by what the list shows: user id, subject or email. */
const findMember = (api: Session["api"], orgSlug: string, ref: string) =>
  Effect.flatMap(api.members.list({ params: { orgSlug } }), (list) =>
    pick(
      list.items.map((member) => ({ ...member, id: member.userId })),
      ref,
      "member",
      (member) => [member.subject, member.email]
    )
  )

const membersList = Command.make(
  "list",
  {},
  Effect.fn("members.list")(function* () {
    const { flags, api, orgSlug } = yield* orgSession
    const list = yield* api.members.list({ params: { orgSlug } })
    yield* show(flags.json, list, () =>
      table([
        ["SUBJECT", "NAME", "EMAIL", "ROLE", "JOINED"],
        ...list.items.map((m) => [`${m.subject}`, m.name ?? "", m.email ?? "", m.role, m.joinedAt])
      ])
    )
  })
).pipe(Command.withDescription("List the org's members"))

const membersAdd = Command.make(
  "add",
  {
    subject: Argument.String("subject").pipe(Argument.withDescription("The user's subject at their sign-in provider")),
    provider: Flag.String("provider").pipe(
      Flag.withDescription("Their sign-in provider (default: yours)"),
      Flag.optional
    ),
    role: Flag.Literals("role", roles).pipe(Flag.withDescription("admin, member or viewer"), Flag.withDefault("member"))
  },
  Effect.fn("members.add")(function* ({ subject, provider, role }) {
    const { flags, api, orgSlug } = yield* orgSession
    const chosen = provider._tag === "Some" ? provider.value : (yield* api.identity.me()).user.provider
    const member = yield* api.members.add({ params: { orgSlug }, payload: { provider: chosen, subject, role } })
    yield* show(flags.json, member, () => [`${member.subject} is now ${member.role} of ${orgSlug}`])
  })
).pipe(Command.withDescription("Add a user who has signed in before as a member (others: `invites create`)"))

const membersRole = Command.make(
  "role",
  { member: memberRef, role: roleArgument },
  Effect.fn("members.role")(function* ({ member, role }) {
    const { flags, api, orgSlug } = yield* orgSession
    const found = yield* findMember(api, orgSlug, member)
    const updated = yield* api.members.setRole({ params: { orgSlug, userId: found.userId }, payload: { role } })
    yield* show(flags.json, updated, () => [`${updated.subject} is now ${updated.role} of ${orgSlug}`])
  })
).pipe(Command.withDescription("Change a member's role (an org keeps at least one admin)"))

const membersRemove = Command.make(
  "remove",
  { member: memberRef },
  Effect.fn("members.remove")(function* ({ member }) {
    const { flags, api, orgSlug } = yield* orgSession
    const found = yield* findMember(api, orgSlug, member)
    yield* api.members.remove({ params: { orgSlug, userId: found.userId } })
    yield* show(flags.json, { removed: found.userId, subject: found.subject }, () => [
      `removed ${found.subject} from ${orgSlug}`
    ])
  })
).pipe(Command.withDescription("Remove a member (yourself: leave the org)"))

export const members = Command.make("members").pipe(
  Command.withDescription("Members of an org and their roles"),
  Command.withSubcommands([membersList, membersAdd, membersRole, membersRemove])
)

// invites -----------------------------------------------------------------------------------------------------

const invitesList = Command.make(
  "list",
  {},
  Effect.fn("invites.list")(function* () {
    const { flags, api, orgSlug } = yield* orgSession
    const list = yield* api.invites.list({ params: { orgSlug } })
    yield* show(flags.json, list, () =>
      table([
        ["EMAIL", "ROLE", "STATE", "EXPIRES", "ID"],
        ...list.items.map((i) => [i.email, i.role, i.state, i.expiresAt, i.inviteId])
      ])
    )
  })
).pipe(Command.withDescription("List the org's pending and expired invites"))

const invitesCreate = Command.make(
  "create",
  {
    email: Argument.String("email").pipe(Argument.withDescription("Who to invite")),
    role: Flag.Literals("role", roles).pipe(Flag.withDescription("admin, member or viewer"), Flag.withDefault("member"))
  },
  Effect.fn("invites.create")(function* ({ email, role }) {
    const { flags, api, orgSlug } = yield* orgSession
    const invite = yield* api.invites.create({ params: { orgSlug }, payload: { email, role } as never })
    yield* show(flags.json, invite, () => [
      `invited ${invite.email} as ${invite.role} of ${orgSlug} (the link is mailed; it expires ${invite.expiresAt})`
    ])
  })
).pipe(Command.withDescription("Invite someone by email (sent again, and renewed, for a pending invite)"))

const invitesRevoke = Command.make(
  "revoke",
  { invite: Argument.String("invite").pipe(Argument.withDescription("The invited email, or the invite's id")) },
  Effect.fn("invites.revoke")(function* ({ invite }) {
    const { flags, api, orgSlug } = yield* orgSession
    const list = yield* api.invites.list({ params: { orgSlug } })
    const found = yield* pick(
      list.items.filter((item) => item.state === "pending").map((item) => ({ ...item, id: item.inviteId })),
      invite,
      "pending invite",
      (item) => [item.email]
    )
    yield* api.invites.revoke({ params: { orgSlug, inviteId: found.inviteId } })
    yield* show(flags.json, { revoked: found.inviteId, email: found.email }, () => [
      `revoked the invite of ${found.email}`
    ])
  })
).pipe(Command.withDescription("Revoke a pending invite"))

export const invites = Command.make("invites").pipe(
  Command.withDescription("Invitations to an org"),
  Command.withSubcommands([invitesList, invitesCreate, invitesRevoke])
)
