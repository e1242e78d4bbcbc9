import { ProjectId } from "@hostplane/core/kernel/Ids"
import { StorageStore } from "@hostplane/core/storage/StorageStore"
import { Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"

const Row = Schema.Struct({
  projectId: ProjectId,
  prefix: Schema.String,
  granted: Schema.Boolean,
  // A `bigint` column, which the driver reads as text.
  usedBytes: Schema.NumberFromString
})

/** `StorageStore` on PostgreSQL (`storage_grants`). */
export const layer = Layer.effect(
  StorageStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const find = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: Row,
      execute: (projectId) =>
        sql`SELECT project_id, prefix, granted, used_bytes::text AS used_bytes FROM storage_grants
            WHERE project_id = ${projectId}`
    })
    return StorageStore.of({
      find: (projectId) => find(projectId).pipe(Effect.orDie),
      setGranted: (projectId, prefix, granted) =>
        sql`INSERT INTO storage_grants (project_id, prefix, granted) VALUES (${projectId}, ${prefix}, ${granted})
            ON CONFLICT (project_id) DO UPDATE SET granted = EXCLUDED.granted`.pipe(Effect.asVoid, Effect.orDie),
      recordUsage: (lines) =>
        sql<{ projectId: string }>`
          UPDATE storage_grants SET used_bytes = report."storageBytes"
          FROM jsonb_to_recordset(${JSON.stringify(lines)}::jsonb) AS report ("projectId" text, "storageBytes" bigint)
          WHERE storage_grants.project_id = report."projectId"
          RETURNING storage_grants.project_id`.pipe(
          Effect.map((rows) => rows.map((row) => ProjectId.make(row.projectId))),
          Effect.orDie
        )
    })
  })
)
