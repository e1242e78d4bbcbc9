import { SecretMeta } from "@hostplane/core/secrets/Secret"
import { SecretStore } from "@hostplane/core/secrets/SecretStore"
import { Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { finishing } from "../kernel/EnvelopeStorePg.ts"
import { Timestamp } from "../internal/Rows.ts"
import { ProjectId } from "@hostplane/core/kernel/Ids"

const MetaRow = Schema.Struct({ ...SecretMeta.fields, updatedAt: Timestamp })

const SealedRow = Schema.Struct({
  projectId: ProjectId,
  name: Schema.String,
  version: Schema.Number,
  keyId: Schema.String,
  ciphertext: Schema.String,
  updatedAt: Timestamp
})

/** `SecretStore` on PostgreSQL: a put is one upsert, so concurrent puts of a name get distinct versions. */
export const layer = Layer.effect(
  SecretStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const list = SqlSchema.findAll({
      Request: Schema.String,
      Result: MetaRow,
      execute: (projectId) =>
        sql`SELECT name, version, updated_at FROM secrets WHERE project_id = ${projectId} ORDER BY name COLLATE "C"`
    })
    const listSealed = SqlSchema.findAll({
      Request: Schema.String,
      Result: SealedRow,
      execute: (projectId) =>
        sql`SELECT project_id, name, version, key_id, ciphertext, updated_at FROM secrets
            WHERE project_id = ${projectId} ORDER BY name COLLATE "C"`
    })
    const decodeMeta = Schema.decodeUnknownEffect(MetaRow)

    return SecretStore.of({
      list: (projectId) => list(projectId).pipe(Effect.orDie),
      // Plain `sql` and one row decode: the request needs no encoding. With `finish`, the one statement of the
      // write envelope (`finishing`): the org lock, the guard, this upsert, the audit row and the revision raise.
      put: (projectId, name, sealed, at, finish) =>
        finishing<Record<string, unknown>>(
          sql,
          finish,
          (source) => sql`INSERT INTO secrets (project_id, name, version, key_id, ciphertext, updated_at)
            SELECT ${projectId}::text, ${name}::text, 1, ${sealed.keyId}::text, ${sealed.ciphertext}::text,
              ${at}::timestamptz
            FROM ${source}
            ON CONFLICT (project_id, name) DO UPDATE SET
              version = secrets.version + 1,
              key_id = EXCLUDED.key_id,
              ciphertext = EXCLUDED.ciphertext,
              updated_at = EXCLUDED.updated_at
            RETURNING name, version, updated_at`
        ).pipe(
          Effect.catchTag("SqlError", Effect.die),
          Effect.flatMap((rows) => Effect.orDie(decodeMeta(rows[0])))
        ),
      remove: (projectId, name) =>
        sql`DELETE FROM secrets WHERE project_id = ${projectId} AND name = ${name} RETURNING name`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),
      listSealed: (projectId) =>
        listSealed(projectId).pipe(
          Effect.map((rows) =>
            rows.map((row) => ({
              projectId: row.projectId,
              name: row.name,
              version: row.version,
              sealed: { keyId: row.keyId, ciphertext: row.ciphertext },
              updatedAt: row.updatedAt
            }))
          ),
          Effect.orDie
        )
    })
  })
)
