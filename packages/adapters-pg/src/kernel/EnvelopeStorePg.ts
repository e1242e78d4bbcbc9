import { type AccessRead, EnvelopeRefused, EnvelopeStore, type Finish } from "@hostplane/core/kernel/EnvelopeStore"
import type { DeploymentId, OrgId, ProjectId } from "@hostplane/core/kernel/Ids"
import { Role } from "@hostplane/core/kernel/Role"
import type { OrgRow } from "@hostplane/core/orgs/Org"
import { Plan } from "@hostplane/core/orgs/Org"
import type { ProjectRow } from "@hostplane/core/projects/Project"
import { Effect, Layer, Option } from "effect"
import { type SqlClient as Client, SqlClient, type SqlError, type Statement } from "effect/sql"
import { insertAudit, insertAuditFrom } from "./AuditLogPg.ts"
import { raiseCtes, stampRevision } from "./NodeRevisionsPg.ts"

type Row = Record<string, unknown>

// The envelope's rows are read twice per write (before the transaction and under the lock), so they are checked by
// hand instead of by an effectful schema decode, which cost a chain of fibre steps per row in the write profile
// (`bench:write-ab`: server CPU per secret put 0.89x of the decoding tree, median of 4 paired runs).
// The checks are those of `OrgRowSchema` and `ProjectRowSchema`; a row that fails one is a defect.
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

/** A column's name under `prefix` as the client names it (`envelope` + `slug`: `envelopeSlug`). */
const prefixed = (prefix: string, name: string) =>
  prefix === "" ? name : `${prefix}${name.charAt(0).toUpperCase()}${name.slice(1)}`

/**
 * The columns `accessOf` reads, from a row `row` of `hostplane_envelope_lock` (its `org`, `role` and `project`),
 * each named `<prefix><column>`: the lock's own read (no prefix) and the guarded write's (`envelope_`). Built once.
 */
const lockedColumns = (row: "l" | "g", prefix: "" | "envelope_") =>
  [
    ...["id", "slug", "name", "plan", "personal", "created_at"].map((c) => `(${row}.org).${c} AS ${prefix}${c}`),
    `${row}.role AS ${prefix}role`,
    ...["id", "org_id", "name", "hostname", "created_at", "live_deployment_id", "deleting_since"].map(
      (c) => `(${row}.project).${c} AS ${prefix}project_${c}`
    )
  ].join(", ")
const lockColumns = lockedColumns("l", "")
const guardColumns = lockedColumns("g", "envelope_")

/**
 * The org's columns, the member's role, the project's columns under `project_*` names (null when not joined), all
 * under `prefix` when given. No row, or a null org id, is no org.
 */
const accessOf = (rows: ReadonlyArray<Row>, prefix = ""): AccessRead => {
  const row = rows[0]
  const name = (field: string) => prefixed(prefix, field)
  if (row === undefined || column(row, name("id")) === null) {
    return { org: Option.none(), role: Option.none(), project: Option.none() }
  }
  const org: OrgRow = {
    id: text(row, name("id")) as OrgId,
    slug: text(row, name("slug")),
    name: text(row, name("name")),
    plan: literal(Plan.literals, row, name("plan")),
    personal: boolean(row, name("personal")),
    createdAt: timestamp(row, name("createdAt"))
  }
  const project: Option.Option<ProjectRow> =
    column(row, name("projectId")) === null
      ? Option.none()
      : Option.some({
          id: text(row, name("projectId")) as ProjectId,
          orgId: text(row, name("projectOrgId")) as OrgId,
          name: text(row, name("projectName")),
          hostname: text(row, name("projectHostname")),
          createdAt: timestamp(row, name("projectCreatedAt")),
          liveDeploymentId: nullableText(row, name("projectLiveDeploymentId")) as DeploymentId | null,
          deletingSince: nullableTimestamp(row, name("projectDeletingSince"))
        })
  const role =
    column(row, name("role")) === null ? Option.none() : Option.some(literal(Role.literals, row, name("role")))
  return { org: Option.some(org), role, project }
}

/**
 * A store write that carries the envelope's `Finish` (`Mutation.projectStatement`), as one statement outside any
 * transaction, so the org lock is held only while PostgreSQL runs it:
 * - `envelope_guard` takes the org lock and reads again (`hostplane_envelope_lock`, fresh snapshots after the wait);
 * - `envelope_allowed` holds a row when the guard's checks pass (`guardAllows`, in SQL);
 * - the audit insert, the revision raise and `write(source)` (the store's `INSERT`, `UPDATE` or `DELETE` with
 *   `RETURNING`, its rows selected `FROM ${source}`) each take their rows from `envelope_allowed`, so nothing is
 *   written, and no other lock taken, before the org lock is held and the checks passed.
 *
 * Answers the write's rows, or fails with `EnvelopeRefused` and what the guard read. Without `finish`, `write` alone
 * (its `source` a one-row `VALUES`). The writes that take rows locked since the statement began (the counter, a
 * conflicting row) update their newest versions, as PostgreSQL's `UPDATE` and `ON CONFLICT` do in read committed.
 * Outside a transaction it runs on a shared (multiplexed) connection, where statements queued behind it wait while it
 * waits for the lock: the lock's other holders are envelope transactions, which do no slow work under it.
 */
export const finishing = <A extends object>(
  sql: Client.SqlClient,
  finish: Finish | undefined,
  write: (source: Statement.Fragment) => Statement.Fragment
): Effect.Effect<ReadonlyArray<A>, EnvelopeRefused | SqlError.SqlError> => {
  if (finish === undefined) return sql<A>`${write(sql`(VALUES (1)) AS one`)}`
  const { guard, audit, raise } = finish
  const allowed = sql`envelope_allowed`
  const ctes = [
    sql`envelope_guard AS (SELECT l.org, l.role, l.project
      FROM hostplane_envelope_lock(${guard.orgId}, ${guard.userId}, ${guard.projectId}) l)`,
    sql`envelope_allowed AS (SELECT FROM envelope_guard g
      WHERE g.role IN ${sql.in(guard.roles)} AND (g.project).id = ${guard.projectId}
        AND (g.project).org_id = ${guard.orgId}
        ${guard.refuseDeleting ? sql`AND (g.project).deleting_since IS NULL` : sql``})`,
    ...(audit === undefined ? [] : [sql`audit AS (${insertAuditFrom(sql, audit, allowed)})`]),
    ...(raise === undefined ? [] : [raiseCtes(sql, raise, allowed)]),
    sql`written AS (${write(allowed)})`
  ]
  return Effect.flatMap(
    sql<Row>`WITH ${sql.csv(ctes)}
      SELECT written.*, EXISTS (SELECT FROM envelope_allowed) AS envelope_allowed, ${sql.literal(guardColumns)}
      FROM envelope_guard g LEFT JOIN written ON true`,
    (rows) =>
      rows[0]?.["envelopeAllowed"] === true
        ? Effect.succeed(rows as ReadonlyArray<Row> as ReadonlyArray<A>)
        : Effect.fail(new EnvelopeRefused({ read: accessOf(rows, "envelope") }))
  )
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
      // One round trip: `hostplane_envelope_lock` (migration kernel/0002) takes the lock, then reads in a fresh snapshot. Reads
      // joined to `FOR UPDATE` in one statement would use the snapshot taken before it waited, and miss what the
      // previous holder committed (a project's delete).
      lock: (orgId, userId, projectId) =>
        sql<Row>`
          SELECT ${sql.literal(lockColumns)}
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
