import { Errors, Identity, Kernel } from "@hostplane/core"
import { Effect, Layer, Redacted } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import { apiError } from "../errors/ApiError.ts"

/** Bearer session check (decisions.md part 1): provides the actor to every endpoint that needs a login. */
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
    return Authentication.of({
      bearer: (httpEffect, { credential }) =>
        Effect.flatMap(identity.authenticate(Redacted.value(credential)), (actor) =>
          Effect.provideService(httpEffect, Kernel.CurrentActor, actor)
        )
    })
  })
)
