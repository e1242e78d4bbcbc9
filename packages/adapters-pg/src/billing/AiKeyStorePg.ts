import { AiKeyStore } from "@hostplane/core/ai/AiKeyStore"
import { ProjectId } from "@hostplane/core/kernel/Ids"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { joinSealed, splitSealed, Timestamp } from "../internal/Rows.ts"

const KeyRow = Schema.Struct({
  projectId: ProjectId,
  keyHash: Schema.String,
  keySealed: Schema.String,
  createdAt: Timestamp
})

/** `AiKeyStore` on PostgreSQL; a project's key goes with the project (`ON DELETE CASCADE`). */
export const layer = Layer.effect(
  AiKeyStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const find = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: KeyRow,
      execute: (projectId) =>
        sql`SELECT project_id, key_hash, key_sealed, created_at FROM ai_keys WHERE project_id = ${projectId}`
    })
    return AiKeyStore.of({
      find: (projectId) =>
        find(projectId).pipe(
          Effect.map(
            Option.map((row) => ({
              projectId: row.projectId,
              keyHash: row.keyHash,
              sealed: splitSealed(row.keySealed),
              createdAt: row.createdAt
            }))
          ),
          Effect.orDie
        ),
      insert: (row) =>
        sql`INSERT INTO ai_keys (project_id, key_hash, key_sealed, created_at)
            VALUES (${row.projectId}, ${row.keyHash}, ${joinSealed(row.sealed)}, ${row.createdAt}::timestamptz)`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      remove: (projectId) =>
        sql`DELETE FROM ai_keys WHERE project_id = ${projectId} RETURNING project_id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),
      projectOfKey: (keyHash) =>
        sql<{ projectId: string }>`SELECT project_id FROM ai_keys WHERE key_hash = ${keyHash}`.pipe(
          Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), (row) => row.projectId as ProjectId)),
          Effect.orDie
        )
    })
  })
)
