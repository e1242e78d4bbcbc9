import { EndUser } from "@hostplane/core"
import { ProjectId } from "@hostplane/core/kernel/Ids"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { joinSealed, splitSealed, Timestamp } from "../internal/Rows.ts"

const GrantRow = Schema.Struct({
  projectId: ProjectId,
  sessionDays: Schema.Int,
  allowSignups: Schema.Boolean,
  grantedAt: Timestamp
})

const ProviderRow = Schema.Struct({
  projectId: ProjectId,
  provider: EndUser.AuthProviderName,
  clientId: Schema.String,
  clientSecretSealed: Schema.String,
  updatedAt: Timestamp
})

/** `AuthStore` on PostgreSQL; a project's rows go with the project, providers with the grant (`ON DELETE CASCADE`). */
export const layer = Layer.effect(
  EndUser.AuthStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const find = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: GrantRow,
      execute: (projectId) =>
        sql`SELECT project_id, session_days, allow_signups, granted_at FROM auth_grants WHERE project_id = ${projectId}`
    })
    const providers = SqlSchema.findAll({
      Request: Schema.String,
      Result: ProviderRow,
      execute: (projectId) =>
        sql`SELECT project_id, provider, client_id, client_secret_sealed, updated_at
            FROM auth_providers WHERE project_id = ${projectId} ORDER BY provider`
    })
    return EndUser.AuthStore.of({
      find: (projectId) =>
        find(projectId).pipe(
          Effect.map(
            Option.map((row): EndUser.AuthGrantRow => ({
              projectId: row.projectId,
              settings: { sessionDays: row.sessionDays, allowSignups: row.allowSignups },
              grantedAt: row.grantedAt
            }))
          ),
          Effect.orDie
        ),
      save: (row) =>
        sql`INSERT INTO auth_grants (project_id, session_days, allow_signups, granted_at)
            VALUES (${row.projectId}, ${row.settings.sessionDays}, ${row.settings.allowSignups}, ${row.grantedAt}::timestamptz)
            ON CONFLICT (project_id) DO UPDATE
              SET session_days = EXCLUDED.session_days, allow_signups = EXCLUDED.allow_signups`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      remove: (projectId) =>
        sql`DELETE FROM auth_grants WHERE project_id = ${projectId} RETURNING project_id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),
      providers: (projectId) =>
        providers(projectId).pipe(
          Effect.map((rows) =>
            rows.map((row): EndUser.AuthProviderRow => ({
              projectId: row.projectId,
              provider: row.provider,
              clientId: row.clientId,
              sealedSecret: splitSealed(row.clientSecretSealed),
              updatedAt: row.updatedAt
            }))
          ),
          Effect.orDie
        ),
      putProvider: (row) =>
        sql`INSERT INTO auth_providers (project_id, provider, client_id, client_secret_sealed, updated_at)
            VALUES (${row.projectId}, ${row.provider}, ${row.clientId}, ${joinSealed(row.sealedSecret)}, ${row.updatedAt}::timestamptz)
            ON CONFLICT (project_id, provider) DO UPDATE
              SET client_id = EXCLUDED.client_id, client_secret_sealed = EXCLUDED.client_secret_sealed,
                  updated_at = EXCLUDED.updated_at`.pipe(Effect.asVoid, Effect.orDie),
      removeProvider: (projectId, provider) =>
        sql`DELETE FROM auth_providers WHERE project_id = ${projectId} AND provider = ${provider} RETURNING provider`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        )
    })
  })
)
