import { Errors, Kernel } from "@hostplane/core"
import { Effect } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpServerResponse } from "effect/http"
import { bearerActor } from "./Authentication.ts"
import { HostActor, HostAuthenticatorError, hostAuthenticatorUnavailable } from "./HostAuthenticator.ts"

/**
 * The spec's role column for the org routes whose minimum is above viewer (control-api.md parts 4.2 to 4.15; a route
 * not listed needs a membership). Only read here, for input refused before a handler could authorize.
 */
const minimumRoles: Readonly<Record<string, Kernel.Role>> = {}

/** The minimum role of an org route (`METHOD template`): the spec's, or a membership. */
export const minimumRoleOf = (method: string, template: string): Kernel.Role =>
  minimumRoles[`${method} ${template}`] ?? "viewer"

/** The routes `minimumRoles` names, for the test that pins them to routes that exist. */
export const rolesListed = Object.keys(minimumRoles)

/** A refusal in the error envelope, with its code's status (decisions.md part 1). */
const refusal = (error: Errors.Unauthorized | Errors.NotFound | Errors.Forbidden) => {
  const code = Errors[error._tag].code
  return HttpServerResponse.jsonUnsafe({ code, message: error.message }, { status: Errors.statusOf(code) })
}

/** A path parameter by the route's template, percent-decoded as the router does; undefined when malformed. */
const paramOf = (template: ReadonlyArray<string>, path: ReadonlyArray<string>, name: string) => {
  const index = template.indexOf(name)
  const raw = index < 0 ? undefined : path[index]
  if (raw === undefined) return undefined
  try {
    return decodeURIComponent(raw)
  } catch {
    return undefined
  }
}

/** The credential of `Authorization: Bearer <token>` as HttpApi reads it (scheme in any case, spaces skipped). */
const bearerOf = (authorization: string | undefined) => {
  if (authorization === undefined || !/^bearer /i.test(authorization)) return undefined
  const token = authorization.slice(7).trimStart()
  return token === "" ? undefined : token
}

/**
 * decisions.md part 12's order of checks: authorization (404, 403) before the body's validation (400). The framework
 * decodes a route's parameters, query and body before its handler authorizes, so an input refusal (400, 415) on an
 * org route is checked here again as the handler would have: no session is 401, an outsider or a foreign project
 * 404, a role below the route's minimum 403; undefined keeps the refusal.
 */
export const authorizeFirst = Effect.gen(function* () {
  const actorOf = yield* bearerActor
  const policy = yield* Kernel.Policy
  return (
    request: HttpServerRequest.HttpServerRequest,
    routeTemplate: string,
    path: string
  ): Effect.Effect<HttpServerResponse.HttpServerResponse | undefined> => {
    const template = routeTemplate.split("/")
    const segments = path.split("/")
    const orgSlug = paramOf(template, segments, ":orgSlug")
    if (orgSlug === undefined) return Effect.succeed(undefined)
    const projectName = template.includes(":projectName") ? paramOf(template, segments, ":projectName") : undefined
    const token = bearerOf(request.headers["authorization"])
    const minimum = minimumRoleOf(request.method, routeTemplate)
    // Without a token, the host's sign-in (or an in-process call's user) is the caller.
    const actor =
      token === undefined
        ? Effect.flatMap(Effect.flatten(Effect.service(HostActor)), (actor) =>
            actor === undefined
              ? Effect.fail(new Errors.Unauthorized({ message: "sign in first" }))
              : Effect.succeed(actor)
          )
        : actorOf(token)
    return actor.pipe(
      Effect.flatMap((actor) =>
        projectName === undefined
          ? policy.require(actor, orgSlug, minimum)
          : policy.requireProject(actor, orgSlug, projectName, minimum)
      ),
      Effect.as(undefined),
      Effect.catch((error) =>
        Effect.succeed(error instanceof HostAuthenticatorError ? hostAuthenticatorUnavailable(error) : refusal(error))
      )
    )
  }
})
