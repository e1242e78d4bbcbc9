import { EdgeSessionRow, EdgeSessionStore } from "@hostplane/core/edge/EdgeSessionStore"
import { Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { Timestamp } from "../internal/Rows.ts"

const EdgeSessionRowSchema = Schema.Struct({ ...EdgeSessionRow.fields, expiresAt: Timestamp, createdAt: Timestamp })

/** `EdgeSessionStore` on PostgreSQL. */
export const layer = Layer.effect(
  EdgeSessionStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const find = SqlSchema.findOneOption({
      Request: Schema.Struct({ tokenHash: Schema.String, host: Schema.String, now: Schema.String }),
      Result: EdgeSessionRowSchema,
      execute: ({ tokenHash, host, now }) => sql`
        SELECT token_hash, host, project_id, user_id, password_generation, expires_at, created_at FROM edge_sessions
        WHERE token_hash = ${tokenHash} AND host = ${host} AND expires_at > ${now}::timestamptz`
    })
    return EdgeSessionStore.of({
      insert: (row) =>
        sql`INSERT INTO edge_sessions (token_hash, host, project_id, user_id, password_generation, expires_at,
          created_at) VALUES (${row.tokenHash}, ${row.host}, ${row.projectId}, ${row.userId},
          ${row.passwordGeneration}, ${row.expiresAt}::timestamptz, ${row.createdAt}::timestamptz)`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      find: (tokenHash, host, now) => find({ tokenHash, host, now }).pipe(Effect.orDie)
    })
  })
)
