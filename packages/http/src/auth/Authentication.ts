import { Authentication } from "@hostplane/api/auth/Authentication"
import { Errors, Git, Identity, Kernel } from "@hostplane/core"
import { Effect, Layer, Redacted } from "effect"
import { HostActor } from "./HostAuthenticator.ts"

/** The actor of a bearer token: a personal access token's user (its use recorded), else a session's. */
export const bearerActor = Effect.gen(function* () {
  const identity = yield* Identity.Identity
  const tokens = yield* Git.AccessTokens
  return (token: string): Effect.Effect<Kernel.Actor, Errors.Unauthorized> =>
    token.startsWith(Git.accessTokenPrefix) ? tokens.authenticate(token) : identity.authenticate(token)
})

/**
 * The actor of a request without a bearer token: the host's sign-in (or an in-process call's user), else 401. An
 * authenticator that failed is a defect carrying its error, which the request pipeline answers 503.
 */
export const hostActor: Effect.Effect<Kernel.Actor, Errors.Unauthorized> = Effect.flatMap(
  Effect.flatMap(Effect.service(HostActor), (resolve) => Effect.orDie(resolve)),
  (actor) =>
    actor === undefined ? Effect.fail(new Errors.Unauthorized({ message: "sign in first" })) : Effect.succeed(actor)
)

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.map(bearerActor, (actorOf) =>
    Authentication.of({
      bearer: (httpEffect, { credential }) =>
        Effect.flatMap(Redacted.value(credential) === "" ? hostActor : actorOf(Redacted.value(credential)), (actor) =>
          Effect.provideService(httpEffect, Kernel.CurrentActor, actor)
        )
    })
  )
)
