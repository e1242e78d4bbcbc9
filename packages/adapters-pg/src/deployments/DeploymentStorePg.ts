import { DeploymentRow } from "@hostplane/core/deployments/Deployment"
import { DeploymentStore } from "@hostplane/core/deployments/DeploymentStore"
import { Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { Timestamp } from "../internal/Rows.ts"

// `bytes` is a `bigint` column, which the driver reads as text.
const DeploymentRowSchema = Schema.Struct({
  ...DeploymentRow.fields,
  bytes: Schema.NumberFromString.check(Schema.isInt()),
  createdAt: Timestamp
})

/** `DeploymentStore` on PostgreSQL; manifest and git facts are `jsonb`. */
export const layer = Layer.effect(
  DeploymentStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`id, project_id, version, digest, bytes::text AS bytes, files, created_at, uploaded_by, manifest, git`

    const get = SqlSchema.findOneOption({
      Request: Schema.Struct({ projectId: Schema.String, id: Schema.String }),
      Result: DeploymentRowSchema,
      execute: ({ projectId, id }) =>
        sql`SELECT ${columns} FROM deployments WHERE project_id = ${projectId} AND id = ${id}`
    })
    const list = SqlSchema.findAll({
      Request: Schema.Struct({ projectId: Schema.String, limit: Schema.Number, before: Schema.Number }),
      Result: DeploymentRowSchema,
      execute: ({ projectId, limit, before }) =>
        sql`SELECT ${columns} FROM deployments WHERE project_id = ${projectId} AND version < ${before}
          ORDER BY version DESC LIMIT ${limit}`
    })
    const nextVersion = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ next: Schema.Number }),
      execute: (projectId) =>
        sql`SELECT coalesce(max(version), 0)::int + 1 AS next FROM deployments WHERE project_id = ${projectId}`
    })

    return DeploymentStore.of({
      nextVersion: (projectId) =>
        nextVersion(projectId).pipe(
          Effect.map((row) => row.next),
          Effect.orDie
        ),
      insert: (row) =>
        sql`INSERT INTO deployments (id, project_id, version, digest, bytes, files, created_at, uploaded_by, manifest, git)
          VALUES (${row.id}, ${row.projectId}, ${row.version}, ${row.digest}, ${row.bytes}, ${row.files},
          ${row.createdAt}::timestamptz, ${row.uploadedBy}, ${JSON.stringify(row.manifest)}::jsonb,
          ${row.git === null ? null : JSON.stringify(row.git)}::jsonb)`.pipe(Effect.asVoid, Effect.orDie),
      get: (projectId, id) => get({ projectId, id }).pipe(Effect.orDie),
      list: (projectId, limit, beforeVersion = 2 ** 31 - 1) =>
        list({ projectId, limit, before: beforeVersion }).pipe(Effect.orDie)
    })
  })
)
