import { Authentication } from "@hostplane/api/auth/Authentication"
import { ruleOf } from "@hostplane/api/auth/Rules"
import { Errors, Git, Identity, Kernel } from "@hostplane/core"
import { Effect, Layer, Redacted } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import type { HttpApiEndpoint } from "effect/http-api"
import { HostActor } from "./HostAuthenticator.ts"
import { InvalidInputText, PendingInputIssues } from "../server/RequestPipeline.ts"

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

/** A refusal in the error envelope, with its code's status (decisions.md part 1). */
const refusal = (error: Errors.NotFound | Errors.Forbidden) => {
  const code = Errors[error._tag].code
  return HttpServerResponse.jsonUnsafe({ code, message: error.message }, { status: Errors.statusOf(code) })
}

/**
 * The session check, then the endpoint's rule (`EndpointRule`) on the raw path parameters: both wrap the decoding of
 * the endpoint's parameters, query and body, so an outsider is 404 and a low role 403 before any input is judged
 * (decisions.md part 12). The grant goes to the handler as `CurrentGrant`, where the service running the operation
 * with the same rule takes it instead of authorizing again.
 */
export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function* () {
    const actorOf = yield* bearerActor
    const policy = yield* Kernel.Policy
    /** The grant of the endpoint's rule (undefined: the endpoint has none), or the refusal to answer. */
    const grantOf = (
      endpoint: HttpApiEndpoint.Top,
      actor: Kernel.Actor
    ): Effect.Effect<
      Kernel.Granted | HttpServerResponse.HttpServerResponse | undefined,
      never,
      HttpRouter.RouteContext
    > => {
      const declared = ruleOf(endpoint)
      if (declared === undefined) return Effect.succeed(undefined)
      return Effect.flatMap(HttpRouter.params, (params) => {
        // The router's decoded parameter, as the handler's own: the service picks the same branch.
        const rule =
          declared._tag === "SubjectRule"
            ? Kernel.Rule.forSubject(declared, params[declared.param] === actor.userId)
            : declared
        const orgSlug = params["orgSlug"]
        const projectName = rule._tag === "ProjectRule" ? params["projectName"] : undefined
        if (orgSlug === undefined || (rule._tag === "ProjectRule" && projectName === undefined)) {
          return Effect.die(new Error(`${endpoint.method} ${endpoint.path} carries a rule but names no org or project`))
        }
        return Effect.matchEffect(policy.grant(actor, orgSlug, projectName, rule), {
          onFailure: (error) => Effect.succeed(refusal(error)),
          // Text the pipeline found unreadable in the body is refused now that the caller may run the operation.
          onSuccess: (granted) =>
            Effect.flatMap(Effect.service(PendingInputIssues), (issues) =>
              issues === undefined ? Effect.succeed(granted) : Effect.die(new InvalidInputText(issues))
            )
        })
      })
    }
    return Authentication.of({
      bearer: (httpEffect, { credential, endpoint }) =>
        Effect.flatMap(Redacted.value(credential) === "" ? hostActor : actorOf(Redacted.value(credential)), (actor) =>
          Effect.flatMap(grantOf(endpoint, actor), (granted) =>
            HttpServerResponse.isHttpServerResponse(granted)
              ? Effect.succeed(granted)
              : Effect.provideService(
                  granted === undefined ? httpEffect : Effect.provideService(httpEffect, Kernel.CurrentGrant, granted),
                  Kernel.CurrentActor,
                  actor
                )
          )
        )
    })
  })
)
