import { OAuthStateRow, type SessionPrincipal, UserStore } from "@hostplane/core/identity/UserStore"
import { User } from "@hostplane/core/identity/User"
import { Role } from "@hostplane/core/kernel/Role"
import { OrgRow } from "@hostplane/core/orgs/Org"
import type { MembershipRow } from "@hostplane/core/orgs/OrgStore"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { NullableTimestamp, onUniqueViolation, Timestamp } from "../internal/Rows.ts"

const OAuthStateRowSchema = Schema.Struct({ ...OAuthStateRow.fields, expiresAt: Timestamp })

/** One row per membership (one with null org columns when there is none), the user and session repeated. */
const PrincipalRows = Schema.Array(
  Schema.Struct({
    ...User.fields,
    expiresAt: Timestamp,
    orgId: Schema.NullOr(OrgRow.fields.id),
    orgSlug: Schema.NullOr(Schema.String),
    orgName: Schema.NullOr(Schema.String),
    orgPlan: Schema.NullOr(OrgRow.fields.plan),
    orgPersonal: Schema.NullOr(Schema.Boolean),
    orgCreatedAt: NullableTimestamp,
    role: Schema.NullOr(Role)
  })
)
const decodePrincipalRows = Schema.decodeUnknownEffect(PrincipalRows)

const toPrincipal = (rows: typeof PrincipalRows.Type): Option.Option<SessionPrincipal> => {
  const first = rows[0]
  if (first === undefined) return Option.none()
  const memberships: Array<MembershipRow> = []
  for (const row of rows) {
    if (row.orgId === null || row.role === null) continue
    memberships.push({
      org: {
        id: row.orgId,
        slug: row.orgSlug ?? "",
        name: row.orgName ?? "",
        plan: row.orgPlan ?? "free",
        personal: row.orgPersonal ?? false,
        createdAt: row.orgCreatedAt ?? ""
      },
      role: row.role
    })
  }
  const { id, provider, subject, email, name } = first
  return Option.some({ user: { id, provider, subject, email, name }, expiresAt: first.expiresAt, memberships })
}

/** `UserStore` on PostgreSQL: `(provider, subject)` is a unique constraint, OAuth states are taken by `DELETE ... RETURNING`. */
export const layer = Layer.effect(
  UserStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const findByIdentity = SqlSchema.findOneOption({
      Request: Schema.Struct({ provider: Schema.String, subject: Schema.String }),
      Result: User,
      execute: ({ provider, subject }) =>
        sql`SELECT id, provider, subject, email, name FROM users WHERE provider = ${provider} AND subject = ${subject}`
    })

    const findById = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: User,
      execute: (id) => sql`SELECT id, provider, subject, email, name FROM users WHERE id = ${id}`
    })

    const findSession = SqlSchema.findOneOption({
      Request: Schema.Struct({ tokenHash: Schema.String, now: Schema.String }),
      Result: User,
      execute: ({ tokenHash, now }) => sql`
        SELECT u.id, u.provider, u.subject, u.email, u.name
        FROM sessions s JOIN users u ON u.id = s.user_id
        WHERE s.token_hash = ${tokenHash} AND s.expires_at > ${now}`
    })

    // Plain `sql` and a row decode: no request struct encoded per call on the authentication path.
    const findPrincipal = (tokenHash: string, now: string) =>
      sql`
        SELECT u.id, u.provider, u.subject, u.email, u.name, s.expires_at,
               o.id AS org_id, o.slug AS org_slug, o.name AS org_name, o.plan AS org_plan,
               o.personal AS org_personal, o.created_at AS org_created_at, ms.role
        FROM sessions s JOIN users u ON u.id = s.user_id
        LEFT JOIN (memberships ms JOIN orgs o ON o.id = ms.org_id) ON ms.user_id = u.id
        WHERE s.token_hash = ${tokenHash} AND s.expires_at > ${now}
        ORDER BY ms.joined_at, o.slug COLLATE "C"`.pipe(
        Effect.flatMap(decodePrincipalRows),
        Effect.map(toPrincipal),
        Effect.orDie
      )

    const takeOAuthState = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: OAuthStateRowSchema,
      execute: (stateHash) => sql`
        DELETE FROM oauth_states WHERE state_hash = ${stateHash}
        RETURNING state_hash, redirect, code_verifier, expires_at`
    })

    const insert = Effect.fn("UserStorePg.insert")(function* (user: User, createdAt: string) {
      const created = yield* sql`
        INSERT INTO users (id, provider, subject, email, name, created_at)
        VALUES (${user.id}, ${user.provider}, ${user.subject}, ${user.email}, ${user.name}, ${createdAt})`.pipe(
        Effect.as(true),
        onUniqueViolation(sql, "users_identity_key", () => false)
      )
      if (created) return { user, created }
      const existing = yield* findByIdentity({ provider: user.provider, subject: user.subject })
      return { user: Option.getOrThrow(existing), created }
    }, Effect.orDie)

    return UserStore.of({
      findByIdentity: (provider, subject) => findByIdentity({ provider, subject }).pipe(Effect.orDie),
      findById: (userId) => findById(userId).pipe(Effect.orDie),
      insert,
      updateProfile: (userId, profile) =>
        sql`UPDATE users SET email = ${profile.email}, name = ${profile.name} WHERE id = ${userId}`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      insertSession: (session) =>
        sql`
          INSERT INTO sessions (token_hash, user_id, expires_at, created_at)
          VALUES (${session.tokenHash}, ${session.userId}, ${session.expiresAt}, ${session.createdAt})`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      findSession: (tokenHash, now) => findSession({ tokenHash, now }).pipe(Effect.orDie),
      findPrincipal,
      insertOAuthState: (state) =>
        sql`
          INSERT INTO oauth_states (state_hash, redirect, code_verifier, expires_at)
          VALUES (${state.stateHash}, ${state.redirect}, ${state.codeVerifier}, ${state.expiresAt})`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      takeOAuthState: (stateHash) => takeOAuthState(stateHash).pipe(Effect.orDie)
    })
  })
)
