import { Ai, Errors } from "@hostplane/core"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { bearer } from "../node/NodeHandlers.ts"
import { AiGatewayApi } from "@hostplane/api/ai/AiApi"

const api = areaApi(AiGatewayApi)

/** The gateway reads the raw body itself, after the key: an unauthorized caller gets 401 whatever it sent. */
export const AiGatewayHandlers = HttpApiBuilder.group(
  api,
  "aiGateway",
  Effect.fn(function* (handlers) {
    const gateway = yield* Ai.AiGateway
    return handlers.handleRaw("chat", ({ headers, request }) =>
      Effect.gen(function* () {
        const body = yield* request.text.pipe(
          Effect.mapError(() => new Errors.BadRequest({ message: "the request body could not be read" }))
        )
        const answer = yield* gateway.chat(bearer(headers.authorization), body)
        return answer._tag === "json"
          ? HttpServerResponse.text(answer.body, { contentType: "application/json" })
          : HttpServerResponse.stream(answer.body, {
              contentType: "text/event-stream",
              headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
            })
      })
    )
  })
)
