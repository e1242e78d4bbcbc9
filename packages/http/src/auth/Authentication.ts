import { Authentication } from "@hostplane/api/auth/Authentication"
import { type Errors, Git, Identity, Kernel } from "@hostplane/core"
import { Effect, Layer, Redacted } from "effect"

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
