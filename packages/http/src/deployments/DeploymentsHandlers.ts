import { Deployments, Kernel } from "@hostplane/core"
import { Effect, Stream } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { DeploymentsApi } from "@hostplane/api/deployments/DeploymentsApi"

const api = areaApi(DeploymentsApi)

const actor = Effect.service(Kernel.CurrentActor)

/**
 * The request body as the bundle reader's input. Read from the request rather than the framework's payload stream,
 * which turns a body that breaks off into a defect (a 500): here it is the bundle's `truncated`.
 */
const bodyOf = (request: HttpServerRequest.HttpServerRequest) =>
  request.stream.pipe(
    Stream.mapError(() => Deployments.invalidBundle("truncated", "the upload broke off before the end of the bundle"))
  )

const declaredLength = (request: HttpServerRequest.HttpServerRequest) => {
  const value = request.headers["content-length"]
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined
}

export const DeploymentsHandlers = HttpApiBuilder.group(
  api,
  "deployments",
  Effect.fn(function* (handlers) {
    const deployments = yield* Deployments.Deployments
    return handlers.handleAll({
      list: ({ params, query }) =>
        Effect.flatMap(actor, (a) => deployments.list(a, params.orgSlug, params.projectName, query)),
      upload: ({ params, headers, request }) =>
        Effect.flatMap(actor, (a) =>
          deployments.upload(a, params.orgSlug, params.projectName, bodyOf(request), {
            commit: headers["x-service-git-commit"],
            message: headers["x-service-git-message"],
            branch: headers["x-service-git-branch"],
            dirty: headers["x-service-git-dirty"],
            contentLength: declaredLength(request)
          })
        ),
      rollback: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => deployments.rollback(a, params.orgSlug, params.projectName, payload.deploymentId))
    })
  })
)
