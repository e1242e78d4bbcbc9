import { Kernel, Projects } from "@hostplane/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { ProjectsApi } from "@hostplane/api/projects/ProjectsApi"

const api = areaApi(ProjectsApi)

const actor = Effect.service(Kernel.CurrentActor)

export const ProjectsHandlers = HttpApiBuilder.group(
  api,
  "projects",
  Effect.fn(function* (handlers) {
    const projects = yield* Projects.Projects
    return handlers.handleAll({
      list: ({ params }) =>
        Effect.flatMap(actor, (a) => projects.list(a, params.orgSlug)).pipe(Effect.map((items) => ({ items }))),
      create: ({ params, payload }) => Effect.flatMap(actor, (a) => projects.create(a, params.orgSlug, payload.name)),
      get: ({ params }) => Effect.flatMap(actor, (a) => projects.get(a, params.orgSlug, params.projectName)),
      overview: ({ params }) => Effect.flatMap(actor, (a) => projects.overview(a, params.orgSlug, params.projectName)),
      remove: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => projects.remove(a, params.orgSlug, params.projectName, payload.confirm)),
      operation: ({ params }) => Effect.flatMap(actor, (a) => projects.operation(a, params.orgSlug, params.opId))
    })
  })
)
