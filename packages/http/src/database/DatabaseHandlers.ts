import { Database, Kernel } from "@hostplane/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { noStore } from "@hostplane/api/server/NoStore"
import { DatabaseApi } from "@hostplane/api/database/DatabaseApi"

const api = areaApi(DatabaseApi)

const actor = Effect.service(Kernel.CurrentActor)

export const DatabaseHandlers = HttpApiBuilder.group(
  api,
  "database",
  Effect.fn(function* (handlers) {
    const databases = yield* Database.Databases
    return handlers.handleAll({
      status: ({ params }) => Effect.flatMap(actor, (a) => databases.status(a, params.orgSlug, params.projectName)),
      create: ({ params }) =>
        Effect.flatMap(actor, (a) => databases.create(a, params.orgSlug, params.projectName)).pipe(Effect.map(noStore)),
      connect: ({ params }) =>
        Effect.flatMap(actor, (a) => databases.connect(a, params.orgSlug, params.projectName)).pipe(
          Effect.map(noStore)
        ),
      endpoint: ({ params }) => Effect.flatMap(actor, (a) => databases.endpoint(a, params.orgSlug, params.projectName)),
      tokens: ({ params }) =>
        Effect.flatMap(actor, (a) => databases.tokens(a, params.orgSlug, params.projectName)).pipe(
          Effect.map((items) => ({ items }))
        ),
      createToken: ({ params }) =>
        Effect.flatMap(actor, (a) => databases.createToken(a, params.orgSlug, params.projectName)).pipe(
          Effect.map(noStore)
        ),
      deleteToken: ({ params }) =>
        Effect.flatMap(actor, (a) => databases.deleteToken(a, params.orgSlug, params.projectName, params.tokenUser)),
      export: ({ params }) =>
        Effect.flatMap(actor, (a) => databases.exportImage(a, params.orgSlug, params.projectName)),
      generations: ({ params }) =>
        Effect.flatMap(actor, (a) => databases.generations(a, params.orgSlug, params.projectName)).pipe(
          Effect.map((items) => ({ items }))
        ),
      restore: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => databases.restore(a, params.orgSlug, params.projectName, payload)),
      remove: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => databases.remove(a, params.orgSlug, params.projectName, payload.confirm)),
      operation: ({ params }) =>
        Effect.flatMap(actor, (a) => databases.operation(a, params.orgSlug, params.projectName, params.opId)),
      abort: ({ params }) =>
        Effect.flatMap(actor, (a) => databases.abort(a, params.orgSlug, params.projectName, params.opId))
    })
  })
)
