import { Context, Effect, Option } from "effect"
import type { SlugTaken } from "../errors/Errors.ts"
import type { Role } from "../kernel/Role.ts"
import type { InviteRow, Member, Notification, NotificationPosition, NotificationRow, OrgRow, Plan } from "./Org.ts"
import type { InviteId, OrgId, UserId } from "../kernel/Ids.ts"

export interface MembershipRow {
  readonly org: OrgRow
  readonly role: Role
}

/** Orgs, memberships, invites and notifications. Slugs are unique; a user is a member of an org at most once. */
export class OrgStore extends Context.Service<
  OrgStore,
  {
    readonly findBySlug: (slug: string) => Effect.Effect<Option.Option<OrgRow>>
    readonly findById: (orgId: OrgId) => Effect.Effect<Option.Option<OrgRow>>
    /** Serialises writers of one org until the surrounding transaction ends. */
    readonly lock: (orgId: OrgId) => Effect.Effect<void>
    readonly insert: (org: OrgRow) => Effect.Effect<void, SlugTaken>
    readonly rename: (orgId: OrgId, name: string) => Effect.Effect<OrgRow>
    /** Only the billing webhook calls it (spec part 3: the only place the plan changes). */
    readonly setPlan: (orgId: OrgId, plan: Plan) => Effect.Effect<void>
    /** Removes the org with its memberships, invites and notifications. */
    readonly remove: (orgId: OrgId) => Effect.Effect<void>
    readonly findMembership: (orgId: OrgId, userId: UserId) => Effect.Effect<Option.Option<Role>>
    readonly membershipsOf: (userId: UserId) => Effect.Effect<ReadonlyArray<MembershipRow>>
    readonly listMembers: (orgId: OrgId) => Effect.Effect<ReadonlyArray<Member>>
    /** False when the user already is a member. */
    readonly addMember: (orgId: OrgId, userId: UserId, role: Role, joinedAt: string) => Effect.Effect<boolean>
    readonly setRole: (orgId: OrgId, userId: UserId, role: Role) => Effect.Effect<void>
    readonly removeMember: (orgId: OrgId, userId: UserId) => Effect.Effect<void>
    readonly countAdmins: (orgId: OrgId) => Effect.Effect<number>
    readonly insertInvite: (invite: Omit<InviteRow, "sentAt">) => Effect.Effect<void>
    readonly updateInvite: (invite: Omit<InviteRow, "sentAt">) => Effect.Effect<void>
    readonly findInvite: (orgId: OrgId, inviteId: InviteId) => Effect.Effect<Option.Option<InviteRow>>
    readonly findInviteByToken: (tokenHash: string) => Effect.Effect<Option.Option<InviteRow>>
    /** The invite still open for this address (stored state `pending`, expired or not). */
    readonly findOpenInvite: (orgId: OrgId, email: string) => Effect.Effect<Option.Option<InviteRow>>
    /** Stored `pending` invites, newest first; the caller tells pending from expired. */
    readonly listOpenInvites: (orgId: OrgId) => Effect.Effect<ReadonlyArray<InviteRow>>
    readonly setInviteState: (inviteId: InviteId, state: "accepted" | "revoked") => Effect.Effect<void>
    /** Records a notification; false (and nothing written) when its id is already recorded. */
    readonly insertNotification: (notification: NotificationRow) => Effect.Effect<boolean>
    /**
     * Newest first (`createdAt`, then `id` in byte order, both descending); with `before`, only the rows after that
     * position in this order (a page's last row: the next page).
     */
    readonly listNotifications: (
      orgId: OrgId,
      limit: number,
      before?: NotificationPosition
    ) => Effect.Effect<ReadonlyArray<Notification>>
  }
>()("@hostplane/core/orgs/OrgStore") {}
