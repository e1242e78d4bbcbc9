import { SlugTaken } from "@hostplane/core/errors/Errors"
import { Role } from "@hostplane/core/kernel/Role"
import { InviteRow, Member, Notification, OrgRow } from "@hostplane/core/orgs/Org"
import { OrgStore } from "@hostplane/core/orgs/OrgStore"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { NullableTimestamp, onUniqueViolation, Timestamp } from "../internal/Rows.ts"

export const OrgRowSchema = Schema.Struct({ ...OrgRow.fields, createdAt: Timestamp })

const MembershipRowSchema = Schema.Struct({ ...OrgRowSchema.fields, role: Role })

const MemberRow = Schema.Struct({ ...Member.fields, joinedAt: Timestamp })

const InviteRowSchema = Schema.Struct({
  ...InviteRow.fields,
  expiresAt: Timestamp,
  createdAt: Timestamp,
  sentAt: NullableTimestamp
})

const NotificationRowSchema = Schema.Struct({ ...Notification.fields, createdAt: Timestamp, sentAt: NullableTimestamp })

/** `OrgStore` on PostgreSQL: `lock` is `SELECT ... FOR UPDATE` on the org row; `sentAt` comes from the outbox row. */
export const layer = Layer.effect(
  OrgStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const orgColumns = sql`o.id, o.slug, o.name, o.plan, o.personal, o.created_at`
    // The invite's latest email counts as sent once its outbox row is `sent`.
    const selectInvites = sql`
      SELECT i.id, i.org_id, i.email, i.role, i.token_hash, i.state, i.expires_at, i.mail_id, i.created_at,
             m.sent_at
      FROM invites i LEFT JOIN mail_outbox m ON m.id = i.mail_id AND m.state = 'sent'`

    const findBySlug = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: OrgRowSchema,
      execute: (slug) => sql`SELECT ${orgColumns} FROM orgs o WHERE o.slug = ${slug}`
    })

    const findById = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: OrgRowSchema,
      execute: (orgId) => sql`SELECT ${orgColumns} FROM orgs o WHERE o.id = ${orgId}`
    })

    const rename = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: Schema.String, name: Schema.String }),
      Result: OrgRowSchema,
      execute: ({ orgId, name }) => sql`UPDATE orgs o SET name = ${name} WHERE o.id = ${orgId} RETURNING ${orgColumns}`
    })

    const findInvite = SqlSchema.findOneOption({
      Request: Schema.Struct({ orgId: Schema.String, inviteId: Schema.String }),
      Result: InviteRowSchema,
      execute: ({ orgId, inviteId }) => sql`${selectInvites} WHERE i.org_id = ${orgId} AND i.id = ${inviteId}`
    })

    const findInviteByToken = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: InviteRowSchema,
      execute: (tokenHash) => sql`${selectInvites} WHERE i.token_hash = ${tokenHash}`
    })

    const findOpenInvite = SqlSchema.findOneOption({
      Request: Schema.Struct({ orgId: Schema.String, email: Schema.String }),
      Result: InviteRowSchema,
      execute: ({ orgId, email }) =>
        sql`${selectInvites} WHERE i.org_id = ${orgId} AND i.email = ${email} AND i.state = 'pending'`
    })

    const membershipsOf = SqlSchema.findAll({
      Request: Schema.String,
      Result: MembershipRowSchema,
      execute: (userId) => sql`
        SELECT ${orgColumns}, ms.role
        FROM memberships ms JOIN orgs o ON o.id = ms.org_id
        WHERE ms.user_id = ${userId}
        ORDER BY ms.joined_at, o.slug COLLATE "C"`
    })

    const listMembers = SqlSchema.findAll({
      Request: Schema.String,
      Result: MemberRow,
      execute: (orgId) => sql`
        SELECT u.id AS user_id, u.provider, u.subject, u.email, u.name, ms.role, ms.joined_at
        FROM memberships ms JOIN users u ON u.id = ms.user_id
        WHERE ms.org_id = ${orgId}
        ORDER BY ms.joined_at, u.id COLLATE "C"`
    })

    const findMembership = SqlSchema.findOneOption({
      Request: Schema.Struct({ orgId: Schema.String, userId: Schema.String }),
      Result: Schema.Struct({ role: Role }),
      execute: ({ orgId, userId }) => sql`SELECT role FROM memberships WHERE org_id = ${orgId} AND user_id = ${userId}`
    })

    const countAdmins = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ count: Schema.Number }),
      execute: (orgId) => sql`SELECT count(*)::int AS count FROM memberships WHERE org_id = ${orgId} AND role = 'admin'`
    })

    const listOpenInvites = SqlSchema.findAll({
      Request: Schema.String,
      Result: InviteRowSchema,
      execute: (orgId) =>
        sql`${selectInvites} WHERE i.org_id = ${orgId} AND i.state = 'pending' ORDER BY i.created_at DESC, i.id COLLATE "C" DESC`
    })

    const listNotifications = SqlSchema.findAll({
      Request: Schema.Struct({
        orgId: Schema.String,
        limit: Schema.Number,
        beforeAt: Schema.NullOr(Schema.String),
        beforeId: Schema.String
      }),
      Result: NotificationRowSchema,
      execute: ({ orgId, limit, beforeAt, beforeId }) => sql`
        SELECT n.id, n.kind, n.message, n.project_name, n.created_at, m.sent_at
        FROM notifications n LEFT JOIN mail_outbox m ON m.id = n.mail_id AND m.state = 'sent'
        WHERE n.org_id = ${orgId}
        ${
          beforeAt === null
            ? sql``
            : sql`AND (n.created_at < ${beforeAt}::timestamptz
              OR (n.created_at = ${beforeAt}::timestamptz AND n.id COLLATE "C" < ${beforeId} COLLATE "C"))`
        }
        ORDER BY n.created_at DESC, n.id COLLATE "C" DESC
        LIMIT ${limit}`
    })

    const insert = (org: OrgRow) =>
      sql`
        INSERT INTO orgs (id, slug, name, plan, personal, created_at)
        VALUES (${org.id}, ${org.slug}, ${org.name}, ${org.plan}, ${org.personal}, ${org.createdAt})`.pipe(
        Effect.as(true),
        onUniqueViolation(sql, "orgs_slug_key", () => false),
        Effect.orDie,
        Effect.flatMap((inserted) =>
          inserted ? Effect.void : Effect.fail(new SlugTaken({ message: `the slug ${org.slug} is taken` }))
        )
      )

    const addMember = (orgId: string, userId: string, role: Role, joinedAt: string) =>
      sql`
        INSERT INTO memberships (org_id, user_id, role, joined_at)
        VALUES (${orgId}, ${userId}, ${role}, ${joinedAt})`.pipe(
        Effect.as(true),
        onUniqueViolation(sql, "memberships_pkey", () => false),
        Effect.orDie
      )

    return OrgStore.of({
      findBySlug: (slug) => findBySlug(slug).pipe(Effect.orDie),
      findById: (orgId) => findById(orgId).pipe(Effect.orDie),
      lock: (orgId) => sql`SELECT id FROM orgs WHERE id = ${orgId} FOR UPDATE`.pipe(Effect.asVoid, Effect.orDie),
      insert,
      rename: (orgId, name) => rename({ orgId, name }).pipe(Effect.orDie),
      setPlan: (orgId, plan) =>
        sql`UPDATE orgs SET plan = ${plan} WHERE id = ${orgId}`.pipe(Effect.asVoid, Effect.orDie),
      remove: (orgId) => sql`DELETE FROM orgs WHERE id = ${orgId}`.pipe(Effect.asVoid, Effect.orDie),
      findMembership: (orgId, userId) =>
        findMembership({ orgId, userId }).pipe(
          Effect.map((row) => row.pipe(Option.map(({ role }) => role))),
          Effect.orDie
        ),
      membershipsOf: (userId) =>
        membershipsOf(userId).pipe(
          Effect.map((rows) => rows.map(({ role, ...org }) => ({ org, role }))),
          Effect.orDie
        ),
      listMembers: (orgId) => listMembers(orgId).pipe(Effect.orDie),
      addMember,
      setRole: (orgId, userId, role) =>
        sql`UPDATE memberships SET role = ${role} WHERE org_id = ${orgId} AND user_id = ${userId}`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      removeMember: (orgId, userId) =>
        sql`DELETE FROM memberships WHERE org_id = ${orgId} AND user_id = ${userId}`.pipe(Effect.asVoid, Effect.orDie),
      countAdmins: (orgId) =>
        countAdmins(orgId).pipe(
          Effect.map(({ count }) => count),
          Effect.orDie
        ),
      insertInvite: (invite) =>
        sql`
          INSERT INTO invites (id, org_id, email, role, token_hash, state, expires_at, mail_id, created_at)
          VALUES (${invite.id}, ${invite.orgId}, ${invite.email}, ${invite.role}, ${invite.tokenHash}, ${invite.state},
            ${invite.expiresAt}, ${invite.mailId}, ${invite.createdAt})`.pipe(Effect.asVoid, Effect.orDie),
      updateInvite: (invite) =>
        sql`
          UPDATE invites SET email = ${invite.email}, role = ${invite.role}, token_hash = ${invite.tokenHash},
            state = ${invite.state}, expires_at = ${invite.expiresAt}, mail_id = ${invite.mailId}
          WHERE id = ${invite.id}`.pipe(Effect.asVoid, Effect.orDie),
      findInvite: (orgId, inviteId) => findInvite({ orgId, inviteId }).pipe(Effect.orDie),
      findInviteByToken: (tokenHash) => findInviteByToken(tokenHash).pipe(Effect.orDie),
      findOpenInvite: (orgId, email) => findOpenInvite({ orgId, email }).pipe(Effect.orDie),
      listOpenInvites: (orgId) => listOpenInvites(orgId).pipe(Effect.orDie),
      setInviteState: (inviteId, state) =>
        sql`UPDATE invites SET state = ${state} WHERE id = ${inviteId}`.pipe(Effect.asVoid, Effect.orDie),
      insertNotification: (n) =>
        sql`
          INSERT INTO notifications (id, org_id, kind, message, project_name, mail_id, created_at)
          VALUES (${n.id}, ${n.orgId}, ${n.kind}, ${n.message}, ${n.projectName}, ${n.mailId}, ${n.createdAt})
          ON CONFLICT (id) DO NOTHING
          RETURNING id`.pipe(
          Effect.map((rows) => rows.length === 1),
          Effect.orDie
        ),
      listNotifications: (orgId, limit, before) =>
        listNotifications({
          orgId,
          limit,
          beforeAt: before?.createdAt ?? null,
          beforeId: before?.id ?? ""
        }).pipe(Effect.orDie)
    })
  })
)
