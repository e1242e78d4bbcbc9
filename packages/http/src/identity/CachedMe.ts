import { Git, Identity } from "@hostplane/core"
import { Effect } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpServerResponse } from "effect/http"
import { apiPrefix } from "../Area.ts"

/** The path `cachedMe` answers: only the bare path (a query string or a trailing slash goes the whole way). */
export const cachedMePath = `${apiPrefix}/me`

const bearerPrefix = "Bearer "

/**
 * The body of the hot `GET /v1/me` for an `Authorization` header, or undefined when it must go the whole way:
 * another spelling of the scheme, a personal access token (its use is recorded), a cold or paused cache. Shared by
 * the pipeline's shortcut below and the listener's lane (`MeLane.ts`).
 */
export const cachedMeAnswer = Effect.map(
  Identity.Identity,
  (identity) =>
    (authorization: string): Effect.Effect<string | undefined> => {
      if (
        !authorization.startsWith(bearerPrefix) ||
        authorization.charCodeAt(bearerPrefix.length) === 32 ||
        authorization.startsWith(Git.accessTokenPrefix, bearerPrefix.length)
      ) {
        return Effect.succeed(undefined)
      }
      return Effect.map(identity.cachedMe(authorization.slice(bearerPrefix.length)), (me) =>
        me === undefined ? undefined : JSON.stringify(me)
      )
    }
)

/**
 * The hot `GET /v1/me`, answered without routing because it is the most frequent call: a session token whose actor and memberships the auth cache holds is answered
 * before the router, with the bytes the `me` endpoint sends (`Response.text` of the JSON, as HttpApi encodes a JSON
 * success; `authCache.test.ts` compares the two). Everything else is undefined and goes the whole way:
 * another spelling of the scheme, a personal access token (its use is recorded), a cold or paused cache. The request
 * pipeline still gives the answer its request id and log line.
 */
export const cachedMe = Effect.map(
  cachedMeAnswer,
  (answer) =>
    (
      request: HttpServerRequest.HttpServerRequest
    ): Effect.Effect<HttpServerResponse.HttpServerResponse | undefined> => {
      const authorization = request.headers["authorization"]
      if (authorization === undefined) return Effect.succeed(undefined)
      return Effect.map(answer(authorization), (body) =>
        body === undefined ? undefined : HttpServerResponse.text(body, { contentType: "application/json" })
      )
    }
)
