import { Errors, type Kernel, Orgs } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import {
  awaitTransactions,
  MemoryState,
  memoryTable,
  type MemoryStore,
  nextSeq,
  read,
  type Sequenced,
  type Tables,
  write
} from "../memory/MemoryState.ts"
import { userRows } from "../identity/UserStoreMemory.ts"
import { outboxRows } from "../mail/MailOutboxMemory.ts"

type StoredInvite = Omit<Orgs.InviteRow, "sentAt">

export interface MemberRecord {
  readonly orgId: string
  readonly userId: string
  readonly role: Kernel.Role
  readonly joinedAt: string
  readonly seq: number
}

export const memberKey = (orgId: string, userId: string): string => `${orgId}\u0000${userId}`

export const orgRows = memoryTable("orgs.orgs", () => new Map<string, Orgs.OrgRow>())
/** Keyed by `memberKey(orgId, userId)`. */
export const memberRows = memoryTable("orgs.members", () => new Map<string, MemberRecord>())
export const inviteRows = memoryTable("orgs.invites", () => new Map<string, Sequenced<StoredInvite>>())
export const notificationRows = memoryTable(
  "orgs.notifications",
  () => new Map<string, Sequenced<Orgs.NotificationRow>>()
)

/** A user's orgs with the role in each, in the order PostgreSQL answers them (joined, then slug). */
export const membershipsIn = (tables: Tables, userId: string): Array<Orgs.MembershipRow> =>
  [...tables(memberRows).values()]
    .filter((member) => member.userId === userId)
    .sort((a, b) => (a.joinedAt < b.joinedAt ? -1 : a.joinedAt > b.joinedAt ? 1 : a.seq - b.seq))
    .flatMap((member) => {
      const org = tables(orgRows).get(member.orgId)
      return org === undefined ? [] : [{ org, role: member.role }]
    })

/** When the outbox row `mailId` went out, as PostgreSQL derives it with a join. */
const sentAtOf = (tables: Tables, mailId: string | null): string | null => {
  const mail = mailId === null ? undefined : tables(outboxRows).get(mailId)
  return mail !== undefined && mail.row.state === "sent" ? mail.row.sentAt : null
}

const toInviteRow = (tables: Tables, invite: StoredInvite): Orgs.InviteRow => ({
  id: invite.id,
  orgId: invite.orgId,
  email: invite.email,
  role: invite.role,
  tokenHash: invite.tokenHash,
  state: invite.state,
  expiresAt: invite.expiresAt,
  mailId: invite.mailId,
  createdAt: invite.createdAt,
  sentAt: sentAtOf(tables, invite.mailId)
})

const storedInvite = (invite: StoredInvite): StoredInvite => ({
  id: invite.id,
  orgId: invite.orgId,
  email: invite.email,
  role: invite.role,
  tokenHash: invite.tokenHash,
  state: invite.state,
  expiresAt: invite.expiresAt,
  mailId: invite.mailId,
  createdAt: invite.createdAt
})

/** A notification's place in its list, as PostgreSQL orders it: newest `createdAt` first, then `id` descending in byte order. */
const positionOrder = (
  a: { readonly createdAt: string; readonly id: string },
  b: { readonly createdAt: string; readonly id: string }
): number => {
  const at = Date.parse(b.createdAt) - Date.parse(a.createdAt)
  if (at !== 0) return at
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0
}

/** Newest first by `createdAt`, insertion order breaking ties. */
const newestFirst = <Row extends { readonly createdAt: string }>(a: Sequenced<Row>, b: Sequenced<Row>): number =>
  a.row.createdAt < b.row.createdAt ? 1 : a.row.createdAt > b.row.createdAt ? -1 : b.seq - a.seq

const findInviteWhere = (
  tables: Tables,
  predicate: (invite: StoredInvite) => boolean
): Option.Option<Orgs.InviteRow> => {
  for (const { row } of tables(inviteRows).values()) {
    if (predicate(row)) return Option.some(toInviteRow(tables, row))
  }
  return Option.none()
}

const membersOf = (tables: Tables, orgId: string) =>
  [...tables(memberRows).values()]
    .filter((member) => member.orgId === orgId)
    .sort((a, b) => (a.joinedAt < b.joinedAt ? -1 : a.joinedAt > b.joinedAt ? 1 : a.seq - b.seq))

/** `OrgStore` on the shared memory state: unique slugs, one membership per user and org, derived `sentAt`. */
export const make = (store: MemoryStore): Orgs.OrgStore["Service"] =>
  Orgs.OrgStore.of({
    findBySlug: (slug) =>
      read(store, (tables) => Option.fromNullishOr([...tables(orgRows).values()].find((org) => org.slug === slug))),
    findById: (orgId) => read(store, (tables) => Option.fromNullishOr(tables(orgRows).get(orgId))),
    lock: () => awaitTransactions(store),
    insert: (org) =>
      write(store, (tables) => {
        if ([...tables(orgRows).values()].some((existing) => existing.slug === org.slug)) return false
        if (tables(orgRows).has(org.id)) throw new Error(`duplicate org id ${org.id}`)
        tables(orgRows).set(org.id, { ...org })
        return true
      }).pipe(
        Effect.flatMap((inserted) =>
          inserted ? Effect.void : Effect.fail(new Errors.SlugTaken({ message: `the slug ${org.slug} is taken` }))
        )
      ),
    rename: (orgId, name) =>
      write(store, (tables) => {
        const org = tables(orgRows).get(orgId)
        if (org === undefined) throw new Error(`no org ${orgId}`)
        const renamed = { ...org, name }
        tables(orgRows).set(orgId, renamed)
        return renamed
      }),
    setPlan: (orgId, plan) =>
      write(store, (tables) => {
        const org = tables(orgRows).get(orgId)
        if (org !== undefined) tables(orgRows).set(orgId, { ...org, plan })
      }),
    remove: (orgId) =>
      write(store, (tables) => {
        tables(orgRows).delete(orgId)
        for (const [key, member] of tables(memberRows)) if (member.orgId === orgId) tables(memberRows).delete(key)
        for (const [id, invite] of tables(inviteRows)) if (invite.row.orgId === orgId) tables(inviteRows).delete(id)
        for (const [id, notification] of tables(notificationRows)) {
          if (notification.row.orgId === orgId) tables(notificationRows).delete(id)
        }
      }),
    findMembership: (orgId, userId) =>
      read(store, (tables) =>
        Option.map(Option.fromNullishOr(tables(memberRows).get(memberKey(orgId, userId))), (m) => m.role)
      ),
    membershipsOf: (userId) => read(store, (tables) => membershipsIn(tables, userId)),
    listMembers: (orgId) =>
      read(store, (tables) =>
        membersOf(tables, orgId).flatMap((member): Array<Orgs.Member> => {
          const user = tables(userRows).get(member.userId)?.user
          if (user === undefined) return []
          return [
            {
              userId: user.id,
              provider: user.provider,
              subject: user.subject,
              email: user.email,
              name: user.name,
              role: member.role,
              joinedAt: member.joinedAt
            }
          ]
        })
      ),
    addMember: (orgId, userId, role, joinedAt) =>
      write(store, (tables) => {
        const key = memberKey(orgId, userId)
        if (tables(memberRows).has(key)) return false
        if (!tables(orgRows).has(orgId)) throw new Error(`no org ${orgId}`)
        if (!tables(userRows).has(userId)) throw new Error(`no user ${userId}`)
        tables(memberRows).set(key, { orgId, userId, role, joinedAt, seq: nextSeq(store) })
        return true
      }),
    setRole: (orgId, userId, role) =>
      write(store, (tables) => {
        const key = memberKey(orgId, userId)
        const member = tables(memberRows).get(key)
        if (member !== undefined) tables(memberRows).set(key, { ...member, role })
      }),
    removeMember: (orgId, userId) =>
      write(store, (tables) => {
        tables(memberRows).delete(memberKey(orgId, userId))
      }),
    countAdmins: (orgId) => read(store, (tables) => membersOf(tables, orgId).filter((m) => m.role === "admin").length),
    insertInvite: (invite) =>
      write(store, (tables) => {
        if (tables(inviteRows).has(invite.id)) throw new Error(`duplicate invite id ${invite.id}`)
        if (!tables(orgRows).has(invite.orgId)) throw new Error(`no org ${invite.orgId}`)
        tables(inviteRows).set(invite.id, { row: storedInvite(invite), seq: nextSeq(store) })
      }),
    updateInvite: (invite) =>
      write(store, (tables) => {
        const existing = tables(inviteRows).get(invite.id)
        if (existing !== undefined) tables(inviteRows).set(invite.id, { ...existing, row: storedInvite(invite) })
      }),
    findInvite: (orgId, inviteId) =>
      read(store, (tables) => findInviteWhere(tables, (invite) => invite.id === inviteId && invite.orgId === orgId)),
    findInviteByToken: (tokenHash) =>
      read(store, (tables) => findInviteWhere(tables, (i) => i.tokenHash === tokenHash)),
    findOpenInvite: (orgId, email) =>
      read(store, (tables) =>
        findInviteWhere(tables, (i) => i.orgId === orgId && i.email === email && i.state === "pending")
      ),
    listOpenInvites: (orgId) =>
      read(store, (tables) =>
        [...tables(inviteRows).values()]
          .filter(({ row }) => row.orgId === orgId && row.state === "pending")
          .sort(newestFirst)
          .map(({ row }) => toInviteRow(tables, row))
      ),
    setInviteState: (inviteId, state) =>
      write(store, (tables) => {
        const existing = tables(inviteRows).get(inviteId)
        if (existing !== undefined) tables(inviteRows).set(inviteId, { ...existing, row: { ...existing.row, state } })
      }),
    insertNotification: (notification) =>
      write(store, (tables) => {
        if (tables(notificationRows).has(notification.id)) return false
        if (!tables(orgRows).has(notification.orgId)) throw new Error(`no org ${notification.orgId}`)
        tables(notificationRows).set(notification.id, {
          row: {
            id: notification.id,
            orgId: notification.orgId,
            kind: notification.kind,
            message: notification.message,
            projectName: notification.projectName,
            mailId: notification.mailId,
            createdAt: notification.createdAt
          },
          seq: nextSeq(store)
        })
        return true
      }),
    listNotifications: (orgId, limit, before) =>
      read(store, (tables) =>
        [...tables(notificationRows).values()]
          .filter(({ row }) => row.orgId === orgId && (before === undefined || positionOrder(row, before) > 0))
          .sort((a, b) => positionOrder(a.row, b.row))
          .slice(0, Math.max(limit, 0))
          .map(({ row }): Orgs.Notification => ({
            id: row.id,
            kind: row.kind,
            message: row.message,
            projectName: row.projectName,
            createdAt: row.createdAt,
            sentAt: sentAtOf(tables, row.mailId)
          }))
      )
  })

export const layer: Layer.Layer<Orgs.OrgStore, never, MemoryState> = Layer.effect(
  Orgs.OrgStore,
  Effect.map(MemoryState, make)
)
