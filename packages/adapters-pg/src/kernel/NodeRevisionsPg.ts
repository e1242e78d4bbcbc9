import { changesOf, NodeRevisions, RevisionFeedLost } from "@hostplane/core/kernel/NodeRevisions"
import { ProjectId } from "@hostplane/core/kernel/Ids"
import { Effect, Layer, Queue, Schema } from "effect"
import { type SqlClient as Client, SqlClient, SqlSchema, type Statement } from "effect/sql"
import { PgSession } from "../PgSession.ts"

/** The channel the trigger of migration kernel/0003_notify_node_revision notifies at every raise's commit. */
export const channel = "hostplane_revision"

// `bigint` columns, which the driver reads as text.
const Revision = Schema.NumberFromString.check(Schema.isInt())

/**
 * The raise after `WITH`: the counter row's update and the project's stamp. `EnvelopeStorePg.finish` puts the audit
 * row's insert before it in the same statement.
 */
export const stampRevision = (sql: Client.SqlClient, projectId: string) => sql`
  next AS (UPDATE node_revision SET value = value + 1 RETURNING value)
  INSERT INTO project_revisions (project_id, revision) SELECT ${projectId}, value FROM next
  ON CONFLICT (project_id) DO UPDATE SET revision = excluded.revision`

/**
 * The same raise as two named CTEs, `next` (the counter) and `stamp` (the project's row), for a statement that does
 * other writes beside it (`EnvelopeStorePg.finishing`); only when `source` (a CTE) holds a row.
 */
export const raiseCtes = (sql: Client.SqlClient, projectId: string, source: Statement.Fragment) => sql`
  next AS (UPDATE node_revision SET value = value + 1 WHERE EXISTS (SELECT FROM ${source}) RETURNING value),
  stamp AS (INSERT INTO project_revisions (project_id, revision) SELECT ${projectId}, value FROM next
    ON CONFLICT (project_id) DO UPDATE SET revision = excluded.revision)`

/**
 * `NodeRevisions` on PostgreSQL: the counter row's lock, held until commit, orders revisions by commit; `watch` listens
 * for the trigger's notification, which PostgreSQL sends once the raise has committed.
 */
export const layer: Layer.Layer<NodeRevisions, never, SqlClient.SqlClient | PgSession> = Layer.effect(
  NodeRevisions,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // A server watches twice (its edge cache and its node's converge), both on the process's session (`PgSession`).
    const session = yield* PgSession

    const raise = SqlSchema.findOne({
      Request: ProjectId,
      Result: Schema.Struct({ revision: Revision }),
      execute: (projectId) => sql`WITH ${stampRevision(sql, projectId)} RETURNING revision::text AS revision`
    })

    // One statement, one snapshot: the counter and the stamps agree.
    const changed = SqlSchema.findAll({
      Request: Schema.Struct({ after: Schema.Number, limit: Schema.Number }),
      Result: Schema.Struct({
        current: Revision,
        projectId: Schema.NullOr(ProjectId),
        revision: Schema.NullOr(Revision)
      }),
      execute: ({ after, limit }) => sql`
        SELECT c.value::text AS current, p.project_id, p.revision::text AS revision
        FROM node_revision c
        LEFT JOIN LATERAL (
          SELECT project_id, revision FROM project_revisions WHERE revision > ${after}
          ORDER BY revision LIMIT ${limit + 1}
        ) p ON true`
    })

    return NodeRevisions.of({
      raise: (projectId) =>
        raise(projectId).pipe(
          Effect.map((row) => row.revision),
          Effect.orDie
        ),
      changedAfter: (after, limit) =>
        changed({ after, limit: Math.max(1, limit) }).pipe(
          Effect.map((rows) =>
            changesOf(
              rows[0]?.current ?? 0,
              rows.flatMap(({ projectId, revision }) =>
                projectId === null || revision === null ? [] : [{ projectId, revision }]
              ),
              limit
            )
          ),
          Effect.orDie
        ),
      watch: Effect.map(
        Effect.mapError(session.listen(channel), (cause) => new RevisionFeedLost({ message: cause.message })),
        (queue) => ({
          next: Queue.takeAll(queue).pipe(
            Effect.asVoid,
            Effect.mapError((cause) => new RevisionFeedLost({ message: String(cause) }))
          )
        })
      )
    })
  })
)
