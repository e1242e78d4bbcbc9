import { HostnameTaken } from "@hostplane/core/errors/Errors"
import { HostnameKind, type HostnameRow, HostnameStatus } from "@hostplane/core/hostnames/Hostname"
import { HostnameStore } from "@hostplane/core/hostnames/HostnameStore"
import { Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { NullableTimestamp, onUniqueViolation, Timestamp } from "../internal/Rows.ts"
import { OrgId, ProjectId } from "@hostplane/core/kernel/Ids"

const HostnameRowSchema = Schema.Struct({
  name: Schema.String,
  projectId: ProjectId,
  orgId: OrgId,
  kind: HostnameKind,
  status: HostnameStatus,
  verifyToken: Schema.NullOr(Schema.String),
  lastError: Schema.NullOr(Schema.String),
  createdAt: Timestamp,
  verifiedAt: NullableTimestamp
})

/**
 * `HostnameStore` on PostgreSQL. The name is the primary key, shared with the default rows `ProjectStorePg` writes.
 */
export const layer = Layer.effect(
  HostnameStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`name, project_id, org_id, kind, status, verify_token, last_error, created_at, verified_at`

    const find = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: HostnameRowSchema,
      execute: (name) => sql`SELECT ${columns} FROM hostnames WHERE name = ${name}`
    })
    const findOwn = SqlSchema.findOneOption({
      Request: Schema.Struct({ name: Schema.String, verifyToken: Schema.String }),
      Result: HostnameRowSchema,
      execute: ({ name, verifyToken }) =>
        sql`SELECT ${columns} FROM hostnames WHERE name = ${name} AND verify_token = ${verifyToken}`
    })
    const listByProject = SqlSchema.findAll({
      Request: Schema.String,
      Result: HostnameRowSchema,
      execute: (projectId) => sql`SELECT ${columns} FROM hostnames WHERE project_id = ${projectId}
        ORDER BY kind = 'default' DESC, created_at, name COLLATE "C"`
    })
    return HostnameStore.of({
      find: (name) => find(name).pipe(Effect.orDie),
      listByProject: (projectId) => listByProject(projectId).pipe(Effect.orDie),
      insert: (row: HostnameRow) =>
        sql`INSERT INTO hostnames (name, project_id, org_id, kind, status, verify_token, last_error, created_at,
          verified_at) VALUES (${row.name}, ${row.projectId}, ${row.orgId}, ${row.kind}, ${row.status},
          ${row.verifyToken}, ${row.lastError}, ${row.createdAt}::timestamptz, ${row.verifiedAt}::timestamptz)`.pipe(
          Effect.as(false),
          onUniqueViolation(sql, "hostnames_pkey", () => true),
          Effect.orDie,
          Effect.flatMap((taken) =>
            taken ? Effect.fail(new HostnameTaken({ message: "this hostname is already in use" })) : Effect.void
          )
        ),
      remove: (name) => sql`DELETE FROM hostnames WHERE name = ${name}`.pipe(Effect.asVoid, Effect.orDie),
      markActive: (name, verifyToken, at) =>
        sql`UPDATE hostnames SET status = 'active', last_error = NULL,
          verified_at = COALESCE(verified_at, ${at}::timestamptz)
          WHERE name = ${name} AND verify_token = ${verifyToken}`.pipe(
          Effect.andThen(findOwn({ name, verifyToken })),
          Effect.orDie
        ),
      recordFailure: (name, verifyToken, error) =>
        sql`UPDATE hostnames SET last_error = ${error}
          WHERE name = ${name} AND verify_token = ${verifyToken} AND status = 'pending_dns'`.pipe(
          Effect.andThen(findOwn({ name, verifyToken })),
          Effect.orDie
        )
    })
  })
)
