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

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function* () {
    const identity = yield* Identity.Identity
    const tokens = yield* Git.AccessTokens
    return Authentication.of({
      bearer: (httpEffect, { credential }) => {
        const token = Redacted.value(credential)
        const actor = token.startsWith(Git.accessTokenPrefix)
          ? tokens.authenticate(token)
          : identity.authenticate(token)
        return Effect.flatMap(actor, (actor) => Effect.provideService(httpEffect, Kernel.CurrentActor, actor))
      }
    })
  })
)
