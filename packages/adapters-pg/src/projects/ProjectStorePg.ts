import { HostnameTaken, ProjectNameTaken } from "@hostplane/core/errors/Errors"
import { ProjectRow } from "@hostplane/core/projects/Project"
import { ProjectStore } from "@hostplane/core/projects/ProjectStore"
import { Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { NullableTimestamp, onUniqueViolation, Timestamp } from "../internal/Rows.ts"

export const ProjectRowSchema = Schema.Struct({
  ...ProjectRow.fields,
  createdAt: Timestamp,
  deletingSince: NullableTimestamp
})

/** `ProjectStore` on PostgreSQL: the project row and its default hostname row are inserted together. */
export const layer = Layer.effect(
  ProjectStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`id, org_id, name, hostname, created_at, live_deployment_id, deleting_since`

    const findByName = SqlSchema.findOneOption({
      Request: Schema.Struct({ orgId: Schema.String, name: Schema.String }),
      Result: ProjectRowSchema,
      execute: ({ orgId, name }) => sql`SELECT ${columns} FROM projects WHERE org_id = ${orgId} AND name = ${name}`
    })
    const findById = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: ProjectRowSchema,
      execute: (id) => sql`SELECT ${columns} FROM projects WHERE id = ${id}`
    })
    const list = SqlSchema.findAll({
      Request: Schema.String,
      Result: ProjectRowSchema,
      execute: (orgId) => sql`SELECT ${columns} FROM projects WHERE org_id = ${orgId} ORDER BY name COLLATE "C"`
    })
    const count = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ count: Schema.Number }),
      execute: (orgId) => sql`SELECT count(*)::int AS count FROM projects WHERE org_id = ${orgId}`
    })

    const insertRows = (project: ProjectRow) =>
      Effect.gen(function* () {
        yield* sql`INSERT INTO projects (id, org_id, name, hostname, created_at) VALUES (
          ${project.id}, ${project.orgId}, ${project.name}, ${project.hostname}, ${project.createdAt}::timestamptz)`
        yield* sql`INSERT INTO hostnames (name, project_id, org_id, kind, status, created_at, verified_at) VALUES (
          ${project.hostname}, ${project.id}, ${project.orgId}, 'default', 'active',
          ${project.createdAt}::timestamptz, ${project.createdAt}::timestamptz)`
        return undefined
      })

    return ProjectStore.of({
      insert: (project) =>
        insertRows(project).pipe(
          onUniqueViolation(sql, "projects_org_name_key", () => "name" as const),
          onUniqueViolation(sql, "hostnames_pkey", () => "hostname" as const),
          Effect.orDie,
          Effect.flatMap((conflict): Effect.Effect<void, ProjectNameTaken | HostnameTaken> => {
            if (conflict === "name")
              return Effect.fail(new ProjectNameTaken({ message: "a project with this name already exists" }))
            if (conflict === "hostname")
              return Effect.fail(new HostnameTaken({ message: "this hostname is already in use" }))
            return Effect.void
          })
        ),
      findByName: (orgId, name) => findByName({ orgId, name }).pipe(Effect.orDie),
      findById: (id) => findById(id).pipe(Effect.orDie),
      list: (orgId) => list(orgId).pipe(Effect.orDie),
      count: (orgId) =>
        count(orgId).pipe(
          Effect.map((row) => row.count),
          Effect.orDie
        ),
      markDeleting: (id, at) =>
        sql`UPDATE projects SET deleting_since = ${at}::timestamptz WHERE id = ${id} AND deleting_since IS NULL`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      setLiveDeployment: (id, deploymentId) =>
        sql`UPDATE projects SET live_deployment_id = ${deploymentId} WHERE id = ${id}`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      removeHostnames: (id) => sql`DELETE FROM hostnames WHERE project_id = ${id}`.pipe(Effect.asVoid, Effect.orDie),
      remove: (id) => sql`DELETE FROM projects WHERE id = ${id}`.pipe(Effect.asVoid, Effect.orDie)
    })
  })
)
