import { Schema } from "effect"
import { Role } from "../kernel/Role.ts"
import { InviteId, OrgId, UserId } from "../kernel/Ids.ts"
import { Plan, type PlanTable } from "../kernel/PlanLimits.ts"

/** Org slugs and project names (decisions.md part 1). */
export const slugPattern = /^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$/u
export const Slug = Schema.String.check(Schema.isPattern(slugPattern))

export { Plan } from "../kernel/PlanLimits.ts"

/** The stored org; `id` never leaves the service. */
export const OrgRow = Schema.Struct({
  id: OrgId,
  slug: Schema.String,
  name: Schema.String,
  plan: Plan,
  personal: Schema.Boolean,
  createdAt: Schema.String
})
export type OrgRow = typeof OrgRow.Type

export const Org = Schema.Struct({
  slug: Schema.String,
  name: Schema.String,
  plan: Plan,
  personal: Schema.Boolean,
  createdAt: Schema.String
})
export type Org = typeof Org.Type

export const OrgMembership = Schema.Struct({ ...Org.fields, role: Role, projectLimit: Schema.Number })
export type OrgMembership = typeof OrgMembership.Type

export const toOrg = (row: OrgRow): Org => ({
  slug: row.slug,
  name: row.name,
  plan: row.plan,
  personal: row.personal,
  createdAt: row.createdAt
})

/** An org as its member sees it, with the project limit of its plan in the numbers in force. */
export const toMembership = (row: OrgRow, role: Role, limits: PlanTable): OrgMembership => ({
  ...toOrg(row),
  role,
  projectLimit: limits[row.plan].projectLimit
})

/** C0 and C1 controls (a newline or an escape would break every list and log that shows the name) and bidi overrides. */
const controlCharacter = /[\p{Cc}\u202a-\u202e\u2066-\u2069]/u

/** Text people read (a name, a title) holds no control character and no bidi override. */
export const noControlCharacters = Schema.makeFilter(
  (text: string) => !controlCharacter.test(text) || "must not contain control characters"
)

/** Text taken from elsewhere made readable: controls become spaces, runs of space collapse, trimmed. */
export const withoutControlCharacters = (text: string): string =>
  text.toWellFormed().replace(new RegExp(controlCharacter.source, "gu"), " ").replace(/\s+/gu, " ").trim()

/** A name people read (an org's display name): 1 to 100 characters, none of them a control character. */
export const DisplayName = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100), noControlCharacters)

/**
 * The nearest `DisplayName` to a name taken from elsewhere (an identity provider's profile, a subject): controls become
 * spaces, runs of space collapse, at most 100 characters (code points) are kept; `fallback` when nothing is left.
 */
export const toDisplayName = (text: string, fallback: string): string => {
  const plain = withoutControlCharacters(text)
  const cut = Array.from(plain).slice(0, 100).join("").trim()
  return cut === "" ? fallback : cut
}

export const OrgName = DisplayName

export const CreateOrgInput = Schema.Struct({ name: OrgName, slug: Schema.optionalKey(Slug) })
export const RenameOrgInput = Schema.Struct({ name: OrgName })
export const DeleteOrgInput = Schema.Struct({ confirm: Schema.String })

export const Member = Schema.Struct({
  userId: UserId,
  provider: Schema.String,
  subject: Schema.String,
  email: Schema.NullOr(Schema.String),
  name: Schema.NullOr(Schema.String),
  role: Role,
  joinedAt: Schema.String
})
export type Member = typeof Member.Type

export const AddMemberInput = Schema.Struct({
  provider: Schema.String.check(Schema.isMinLength(1)),
  subject: Schema.String.check(Schema.isMinLength(1)),
  role: Role
})
export const SetRoleInput = Schema.Struct({ role: Role })

export const InviteState = Schema.Literals(["pending", "accepted", "revoked", "expired"])
export type InviteState = typeof InviteState.Type

/** The stored invite: the token exists only as its hash. */
export const InviteRow = Schema.Struct({
  id: InviteId,
  orgId: OrgId,
  email: Schema.String,
  role: Role,
  tokenHash: Schema.String,
  /** Stored state; `pending` rows past `expiresAt` read as `expired`. */
  state: Schema.Literals(["pending", "accepted", "revoked"]),
  expiresAt: Schema.String,
  mailId: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  /** When the latest invitation email went out, null while queued. */
  sentAt: Schema.NullOr(Schema.String)
})
export type InviteRow = typeof InviteRow.Type

export const Invite = Schema.Struct({
  inviteId: InviteId,
  email: Schema.String,
  role: Role,
  state: InviteState,
  expiresAt: Schema.String,
  sentAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String
})
export type Invite = typeof Invite.Type

const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
export const Email = Schema.String.check(Schema.isMaxLength(320), Schema.isPattern(emailPattern))

export const CreateInviteInput = Schema.Struct({ email: Email, role: Role })

export const InviteView = Schema.Struct({
  orgName: Schema.String,
  orgSlug: Schema.String,
  role: Role,
  state: InviteState,
  expiresAt: Schema.String
})
export type InviteView = typeof InviteView.Type

export const AcceptedInvite = Schema.Struct({ org: OrgMembership, alreadyMember: Schema.Boolean })
export type AcceptedInvite = typeof AcceptedInvite.Type

export const NotificationKind = Schema.Literals(["limit", "backup", "restore"])

export const Notification = Schema.Struct({
  id: Schema.String,
  kind: NotificationKind,
  message: Schema.String,
  projectName: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  sentAt: Schema.NullOr(Schema.String)
})
export type Notification = typeof Notification.Type

/** A page of notifications, newest first; `nextCursor` fetches the older ones, null on the last page. */
export const NotificationPage = Schema.Struct({
  items: Schema.Array(Notification),
  nextCursor: Schema.NullOr(Schema.String)
})
export type NotificationPage = typeof NotificationPage.Type

/** Where a page of notifications ends: its last row's time and id. */
export interface NotificationPosition {
  readonly createdAt: string
  readonly id: string
}

export interface NotificationRow extends Omit<Notification, "sentAt"> {
  readonly orgId: string
  readonly mailId: string | null
}
