import { RepoExists } from "@hostplane/core/errors/Errors"
import { RefUpdate } from "@hostplane/core/git/Repo"
import { RepoStore } from "@hostplane/core/git/RepoStore"
import { OrgId, ProjectId, RepoId } from "@hostplane/core/kernel/Ids"
import { Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { NullableTimestamp, onUniqueViolation, Timestamp } from "../internal/Rows.ts"

const RepoRowSchema = Schema.Struct({
  id: RepoId,
  orgId: OrgId,
  projectId: ProjectId,
  name: Schema.String,
  visibility: Schema.Literals(["private", "public"]),
  defaultBranch: Schema.String,
  deployOnPush: Schema.Boolean,
  createdAt: Timestamp,
  deletedAt: NullableTimestamp
})

const RefUpdateRow = Schema.Struct({ ...RefUpdate.fields, at: Timestamp })

const repoExists = () => new RepoExists({ message: "a repository with this name already exists in the project" })

/** `RepoStore` on PostgreSQL: one partial unique index keeps live names unique per project ignoring case. */
export const layer = Layer.effect(
  RepoStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`id, org_id, project_id, name, visibility, default_branch, deploy_on_push, created_at, deleted_at`

    const list = SqlSchema.findAll({
      Request: Schema.String,
      Result: RepoRowSchema,
      execute: (projectId) =>
        sql`SELECT ${columns} FROM repos WHERE project_id = ${projectId} AND deleted_at IS NULL
            ORDER BY lower(name) COLLATE "C", name COLLATE "C"`
    })
    const findByName = SqlSchema.findOneOption({
      Request: Schema.Struct({ projectId: Schema.String, name: Schema.String }),
      Result: RepoRowSchema,
      execute: ({ projectId, name }) =>
        sql`SELECT ${columns} FROM repos
            WHERE project_id = ${projectId} AND lower(name) = lower(${name}) AND deleted_at IS NULL`
    })
    const deletedBefore = SqlSchema.findAll({
      Request: Schema.Struct({ before: Schema.String, limit: Schema.Number }),
      Result: RepoRowSchema,
      execute: ({ before, limit }) =>
        sql`SELECT ${columns} FROM repos WHERE deleted_at IS NOT NULL AND deleted_at <= ${before}::timestamptz
            ORDER BY deleted_at LIMIT ${limit}`
    })
    const refUpdates = SqlSchema.findAll({
      Request: Schema.Struct({ id: Schema.String, limit: Schema.Number }),
      Result: RefUpdateRow,
      execute: ({ id, limit }) =>
        sql`SELECT ref, old, new, user_id, at FROM repo_ref_updates WHERE repo_id = ${id}
            ORDER BY seq DESC LIMIT ${limit}`
    })
    const inOrg = SqlSchema.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ name: Schema.String, count: Schema.Number }),
      execute: (orgId) =>
        sql`SELECT name, (count(*) OVER ())::int AS count FROM repos WHERE org_id = ${orgId} AND deleted_at IS NULL
            ORDER BY name COLLATE "C" LIMIT 5`
    })

    return RepoStore.of({
      list: (projectId) => list(projectId).pipe(Effect.orDie),
      findByName: (projectId, name) => findByName({ projectId, name }).pipe(Effect.orDie),
      insert: (row) =>
        sql`INSERT INTO repos (id, org_id, project_id, name, visibility, default_branch, deploy_on_push, created_at)
            VALUES (${row.id}, ${row.orgId}, ${row.projectId}, ${row.name}, ${row.visibility}, ${row.defaultBranch},
                    ${row.deployOnPush}, ${row.createdAt}::timestamptz)`.pipe(
          Effect.as(false),
          onUniqueViolation(sql, "repos_project_name_key", () => true),
          Effect.orDie,
          Effect.flatMap((taken) => (taken ? Effect.fail(repoExists()) : Effect.void))
        ),
      update: (id, change) =>
        sql`UPDATE repos SET name = ${change.name}, visibility = ${change.visibility},
              default_branch = ${change.defaultBranch}, deploy_on_push = ${change.deployOnPush} WHERE id = ${id}`.pipe(
          Effect.as(false),
          onUniqueViolation(sql, "repos_project_name_key", () => true),
          Effect.orDie,
          Effect.flatMap((taken) => (taken ? Effect.fail(repoExists()) : Effect.void))
        ),
      softDelete: (id, at) =>
        sql`UPDATE repos SET deleted_at = ${at}::timestamptz WHERE id = ${id} AND deleted_at IS NULL`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      softDeleteProject: (projectId, at) =>
        sql<{ id: RepoId }>`UPDATE repos SET deleted_at = ${at}::timestamptz
            WHERE project_id = ${projectId} AND deleted_at IS NULL RETURNING id`.pipe(
          Effect.map((rows) => rows.map((row) => row.id)),
          Effect.orDie
        ),
      countInOrg: (orgId) =>
        inOrg(orgId).pipe(
          Effect.map((rows) => ({ count: rows[0]?.count ?? 0, names: rows.map((row) => row.name) })),
          Effect.orDie
        ),
      listDeletedBefore: (before, limit) => deletedBefore({ before, limit }).pipe(Effect.orDie),
      purge: (id) =>
        sql`DELETE FROM repos WHERE id = ${id} AND deleted_at IS NOT NULL`.pipe(Effect.asVoid, Effect.orDie),
      recordRefUpdates: (id, userId, changes, at) =>
        changes.length === 0
          ? Effect.void
          : sql`INSERT INTO repo_ref_updates ${sql.insert(
              changes.map((change) => ({
                repoId: id,
                ref: change.ref,
                old: change.old,
                new: change.new,
                userId,
                at: new Date(at)
              })) as unknown as readonly [Record<string, unknown>]
            )}`.pipe(Effect.asVoid, Effect.orDie),
      listRefUpdates: (id, limit) => refUpdates({ id, limit }).pipe(Effect.orDie)
    })
  })
)
