import { type AccessRead, EnvelopeStore, type Finish } from "@hostplane/core/kernel/EnvelopeStore"
import type { DeploymentId, OrgId, ProjectId } from "@hostplane/core/kernel/Ids"
import { Role } from "@hostplane/core/kernel/Role"
import type { OrgRow } from "@hostplane/core/orgs/Org"
import { Plan } from "@hostplane/core/orgs/Org"
import type { ProjectRow } from "@hostplane/core/projects/Project"
import { Effect, Layer, Option } from "effect"
import { type SqlClient as Client, SqlClient, type Statement } from "effect/sql"
import { insertAudit } from "./AuditLogPg.ts"
import { raiseCtes, stampRevision } from "./NodeRevisionsPg.ts"

type Row = Record<string, unknown>

// The envelope's rows are read twice per write (before the transaction and under the lock), so they are checked by
// hand instead of by an effectful schema decode, which cost a chain of fibre steps per row (issue 13's write profile).
// The checks are those of `OrgRowSchema` and `ProjectRowSchema`; a row that fails one is a defect, as before.
const column = (row: Row, name: string): unknown => {
  if (!(name in row)) throw new Error(`EnvelopeStore: no column ${name}`)
  return row[name]
}
const text = (row: Row, name: string): string => {
  const value = column(row, name)
  if (typeof value !== "string") throw new Error(`EnvelopeStore: ${name} is not text`)
  return value
}
const nullableText = (row: Row, name: string): string | null => (column(row, name) === null ? null : text(row, name))
/** A `timestamptz` (a `Date` from the driver) as `Timestamp` decodes it: RFC 3339 UTC with milliseconds. */
const timestamp = (row: Row, name: string): string => {
  const value = column(row, name)
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw new Error(`EnvelopeStore: ${name} is no time`)
  return value.toISOString()
}
const nullableTimestamp = (row: Row, name: string): string | null =>
  column(row, name) === null ? null : timestamp(row, name)
const literal = <L extends string>(literals: ReadonlyArray<L>, row: Row, name: string): L => {
  const value = column(row, name)
  if (!literals.includes(value as L)) throw new Error(`EnvelopeStore: ${name} is not one of ${literals.join(", ")}`)
  return value as L
}
const boolean = (row: Row, name: string): boolean => {
  const value = column(row, name)
  if (typeof value !== "boolean") throw new Error(`EnvelopeStore: ${name} is not a boolean`)
  return value
}

/**
 * A store write that carries the envelope's `Finish`: `write` (an `INSERT`, `UPDATE` or `DELETE` with `RETURNING`)
 * runs as the CTE `written` beside the audit insert and the revision raise, and the statement answers its rows. One
 * statement, one snapshot: the writes commit together, as `finish` after `write` would.
 */
export const finishing = <A extends object>(
  sql: Client.SqlClient,
  write: Statement.Fragment,
  finish: Finish | undefined
): Statement.Statement<A> => {
  const ctes = [
    ...(finish?.audit === undefined ? [] : [sql`audit AS (${insertAudit(sql, finish.audit)})`]),
    ...(finish?.raise === undefined ? [] : [raiseCtes(sql, finish.raise)])
  ]
  return ctes.length === 0
    ? sql<A>`${write}`
    : sql<A>`WITH ${sql.csv(ctes)}, written AS (${write}) SELECT * FROM written`
}

/** The org's columns, the member's role, the project's columns under `project_*` names (null when not joined). */
const accessOf = (rows: ReadonlyArray<Row>): AccessRead => {
  const row = rows[0]
  if (row === undefined) return { org: Option.none(), role: Option.none(), project: Option.none() }
  const org: OrgRow = {
    id: text(row, "id") as OrgId,
    slug: text(row, "slug"),
    name: text(row, "name"),
    plan: literal(Plan.literals, row, "plan"),
    personal: boolean(row, "personal"),
    createdAt: timestamp(row, "createdAt")
  }
  const project: Option.Option<ProjectRow> =
    column(row, "projectId") === null
      ? Option.none()
      : Option.some({
          id: text(row, "projectId") as ProjectId,
          orgId: text(row, "projectOrgId") as OrgId,
          name: text(row, "projectName"),
          hostname: text(row, "projectHostname"),
          createdAt: timestamp(row, "projectCreatedAt"),
          liveDeploymentId: nullableText(row, "projectLiveDeploymentId") as DeploymentId | null,
          deletingSince: nullableTimestamp(row, "projectDeletingSince")
        })
  const role = column(row, "role") === null ? Option.none() : Option.some(literal(Role.literals, row, "role"))
  return { org: Option.some(org), role, project }
}

/**
 * `EnvelopeStore` on PostgreSQL. The reads are one join of `orgs`, `memberships` and `projects`; the lock is the org
 * row's `FOR UPDATE` as `OrgStore.lock` takes it, then that join, both in one function call; `finish` puts the audit
 * insert and the revision raise in one statement (data-modifying CTEs all run, in one snapshot).
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
          WHERE o.slug = ${orgSlug}`.pipe(Effect.orDie, Effect.map(accessOf)),
      // One round trip: `hostplane_envelope_lock` (migration 0026) takes the lock, then reads in a fresh snapshot. Reads
      // joined to `FOR UPDATE` in one statement would use the snapshot taken before it waited, and miss what the
      // previous holder committed (a project's delete).
      lock: (orgId, userId, projectId) =>
        sql<Row>`
          SELECT (l.org).id, (l.org).slug, (l.org).name, (l.org).plan, (l.org).personal, (l.org).created_at, l.role,
            (l.project).id AS project_id, (l.project).org_id AS project_org_id, (l.project).name AS project_name,
            (l.project).hostname AS project_hostname, (l.project).created_at AS project_created_at,
            (l.project).live_deployment_id AS project_live_deployment_id,
            (l.project).deleting_since AS project_deleting_since
          FROM hostplane_envelope_lock(${orgId}, ${userId}, ${projectId ?? null}) l`.pipe(
          Effect.orDie,
          Effect.map(accessOf)
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
