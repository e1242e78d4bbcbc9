import { type AccessRead, EnvelopeStore } from "@hostplane/core/kernel/EnvelopeStore"
import { Role } from "@hostplane/core/kernel/Role"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { OrgRowSchema } from "../orgs/OrgStorePg.ts"
import { ProjectRowSchema } from "../projects/ProjectStorePg.ts"
import { insertAudit } from "./AuditLogPg.ts"
import { stampRevision } from "./NodeRevisionsPg.ts"

const decodeOrg = Schema.decodeUnknownEffect(OrgRowSchema)
const decodeRole = Schema.decodeUnknownEffect(Role)
const decodeProject = Schema.decodeUnknownEffect(ProjectRowSchema)

type Row = Record<string, unknown>

/** The org's columns, the member's role, the project's columns under `project_*` names (null when not joined). */
const accessOf = (rows: ReadonlyArray<Row>): Effect.Effect<AccessRead> =>
  Effect.gen(function* () {
    const row = rows[0]
    if (row === undefined) return { org: Option.none(), role: Option.none(), project: Option.none() }
    const project =
      row.projectId === null
        ? Option.none()
        : Option.some(
            yield* decodeProject({
              id: row.projectId,
              orgId: row.projectOrgId,
              name: row.projectName,
              hostname: row.projectHostname,
              createdAt: row.projectCreatedAt,
              liveDeploymentId: row.projectLiveDeploymentId,
              deletingSince: row.projectDeletingSince
            })
          )
    return {
      org: Option.some(yield* decodeOrg(row)),
      role: row.role === null ? Option.none() : Option.some(yield* decodeRole(row.role)),
      project
    }
  }).pipe(Effect.orDie)

/**
 * `EnvelopeStore` on PostgreSQL. The reads are one join of `orgs`, `memberships` and `projects`; the lock is the org
 * row's `FOR UPDATE` as `OrgStore.lock` takes it, then that join; `finish` puts the audit insert and the revision
 * raise in one statement (data-modifying CTEs all run, in one snapshot).
 */
export const layer = Layer.effect(
  EnvelopeStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`
      o.id, o.slug, o.name, o.plan, o.personal, o.created_at, m.role,
      p.id AS project_id, p.org_id AS project_org_id, p.name AS project_name, p.hostname AS project_hostname,
      p.created_at AS project_created_at, p.live_deployment_id AS project_live_deployment_id,
      p.deleting_since AS project_deleting_since`

    return EnvelopeStore.of({
      access: (orgSlug, userId, projectName) =>
        sql<Row>`
          SELECT ${columns}
          FROM orgs o
          LEFT JOIN memberships m ON m.org_id = o.id AND m.user_id = ${userId}
          LEFT JOIN projects p ON p.org_id = o.id AND p.name = ${projectName ?? null}
          WHERE o.slug = ${orgSlug}`.pipe(Effect.orDie, Effect.flatMap(accessOf)),
      // Two statements: one that waits for the lock, then the reads. A statement's snapshot is taken before it
      // waits, so reads joined to `FOR UPDATE` would miss what the previous holder committed (a project's delete).
      lock: (orgId, userId, projectId) =>
        sql`SELECT id FROM orgs WHERE id = ${orgId} FOR UPDATE`.pipe(
          Effect.andThen(
            sql<Row>`
              SELECT ${columns}
              FROM orgs o
              LEFT JOIN memberships m ON m.org_id = o.id AND m.user_id = ${userId}
              LEFT JOIN projects p ON p.id = ${projectId ?? null}
              WHERE o.id = ${orgId}`
          ),
          Effect.orDie,
          Effect.flatMap(accessOf)
        ),
      finish: (audit, raise) => {
        const statement =
          audit === undefined
            ? raise === undefined
              ? undefined
              : sql`WITH ${stampRevision(sql, raise)}`
            : raise === undefined
              ? insertAudit(sql, audit)
              : sql`WITH audit AS (${insertAudit(sql, audit)}), ${stampRevision(sql, raise)}`
        return statement === undefined ? Effect.void : statement.pipe(Effect.asVoid, Effect.orDie)
      }
    })
  })
)
