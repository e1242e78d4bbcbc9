import { Errors, Git, Identity, Kernel } from "@hostplane/core"
import { Effect, Layer, Redacted } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import { apiError } from "../errors/ApiError.ts"

/**
 * Bearer check (decisions.md part 1): a session token, or a personal access token (`svc_pat_...`, decisions.md part
 * 11) acting with its user's roles; provides the actor to every endpoint that needs a login.
 */
export class Authentication extends HttpApiMiddleware.Service<
  Authentication,
  { provides: Kernel.CurrentActor; requires: never }
>()("@hostplane/http/auth/Authentication", {
  security: { bearer: HttpApiSecurity.bearer },
  error: apiError(Errors.Unauthorized)
}) {}

/** The actor of a bearer token: a personal access token's user (its use recorded), else a session's. */
export const bearerActor = Effect.gen(function* () {
  const identity = yield* Identity.Identity
  const tokens = yield* Git.AccessTokens
  return (token: string): Effect.Effect<Kernel.Actor, Errors.Unauthorized> =>
    token.startsWith(Git.accessTokenPrefix) ? tokens.authenticate(token) : identity.authenticate(token)
})

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.map(bearerActor, (actorOf) =>
    Authentication.of({
      bearer: (httpEffect, { credential }) =>
        Effect.flatMap(actorOf(Redacted.value(credential)), (actor) =>
          Effect.provideService(httpEffect, Kernel.CurrentActor, actor)
        )
    })
  )
)
