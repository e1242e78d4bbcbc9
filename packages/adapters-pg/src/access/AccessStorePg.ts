import { AccessCodeRow, AccessHost, AccessPolicyRow } from "@hostplane/core/access/AccessPolicy"
import { AccessStore } from "@hostplane/core/access/AccessStore"
import { Effect, Layer, Schema, Struct } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { Timestamp } from "../internal/Rows.ts"

const PolicyRow = Schema.Struct({ ...AccessPolicyRow.fields, updatedAt: Timestamp })

const CodeRow = Schema.Struct({ ...AccessCodeRow.fields, expiresAt: Timestamp, createdAt: Timestamp })

/** `AccessStore` on PostgreSQL: writes are single upserts, a code is taken with `DELETE ... RETURNING`. */
export const layer = Layer.effect(
  AccessStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const policyColumns = sql`project_id, mode, password_hash, password_generation, bypass_hash, updated_at`
    const codeColumns = sql`code_hash, host, project_id, org_id, user_id, expires_at, created_at`

    const findPolicy = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: PolicyRow,
      execute: (projectId) => sql`SELECT ${policyColumns} FROM access_policies WHERE project_id = ${projectId}`
    })
    const setPolicy = SqlSchema.findOne({
      Request: Schema.Struct({
        ...Struct.pick(AccessPolicyRow.fields, ["projectId", "mode", "passwordHash"]),
        at: Schema.String
      }),
      Result: PolicyRow,
      execute: ({ projectId, mode, passwordHash, at }) =>
        sql`INSERT INTO access_policies (project_id, mode, password_hash, password_generation, bypass_hash, updated_at)
            VALUES (${projectId}, ${mode}, ${passwordHash}, ${passwordHash === null ? 0 : 1}, NULL, ${at}::timestamptz)
            ON CONFLICT (project_id) DO UPDATE SET
              mode = EXCLUDED.mode,
              password_hash = COALESCE(EXCLUDED.password_hash, access_policies.password_hash),
              password_generation = access_policies.password_generation + EXCLUDED.password_generation,
              updated_at = EXCLUDED.updated_at
            RETURNING ${policyColumns}`
    })
    const takeCode = SqlSchema.findOneOption({
      Request: Schema.Struct({ codeHash: Schema.String, host: Schema.String }),
      Result: CodeRow,
      execute: ({ codeHash, host }) =>
        sql`DELETE FROM access_codes WHERE code_hash = ${codeHash} AND host = ${host} RETURNING ${codeColumns}`
    })
    const findActiveHost = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: AccessHost,
      execute: (name) => sql`SELECT name, project_id, org_id FROM hostnames WHERE name = ${name} AND status = 'active'`
    })

    return AccessStore.of({
      findPolicy: (projectId) => findPolicy(projectId).pipe(Effect.orDie),
      setPolicy: (projectId, mode, passwordHash, at) =>
        setPolicy({ projectId, mode, passwordHash, at }).pipe(Effect.orDie),
      setBypass: (projectId, bypassHash, at) =>
        (bypassHash === null
          ? sql`UPDATE access_policies SET bypass_hash = NULL, updated_at = ${at}::timestamptz
                WHERE project_id = ${projectId}`
          : sql`INSERT INTO access_policies (project_id, mode, password_hash, bypass_hash, updated_at)
                VALUES (${projectId}, 'public', NULL, ${bypassHash}, ${at}::timestamptz)
                ON CONFLICT (project_id) DO UPDATE SET
                  bypass_hash = EXCLUDED.bypass_hash,
                  updated_at = EXCLUDED.updated_at`
        ).pipe(Effect.asVoid, Effect.orDie),
      insertCode: (code) =>
        sql`INSERT INTO access_codes (code_hash, host, project_id, org_id, user_id, expires_at, created_at) VALUES (
          ${code.codeHash}, ${code.host}, ${code.projectId}, ${code.orgId}, ${code.userId},
          ${code.expiresAt}::timestamptz, ${code.createdAt}::timestamptz)`.pipe(Effect.asVoid, Effect.orDie),
      takeCode: (codeHash, host) => takeCode({ codeHash, host }).pipe(Effect.orDie),
      purgeCodes: (at) =>
        sql`DELETE FROM access_codes WHERE expires_at <= ${at}::timestamptz`.pipe(Effect.asVoid, Effect.orDie),
      findActiveHost: (name) => findActiveHost(name).pipe(Effect.orDie)
    })
  })
)
