import { Errors, type Kernel } from "@hostplane/core"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import { apiError } from "../errors/ApiError.ts"

/**
 * Bearer check (decisions.md part 1): a session token, or a personal access token (`svc_pat_...`, decisions.md part
 * 11) acting with its user's roles; provides the actor to every endpoint that needs a login. The server's
 * implementation is `AuthenticationLive` in `@hostplane/http`.
 */
export class Authentication extends HttpApiMiddleware.Service<
  Authentication,
  { provides: Kernel.CurrentActor; requires: never }
>()("@hostplane/http/auth/Authentication", {
  security: { bearer: HttpApiSecurity.bearer },
  error: apiError(Errors.Unauthorized)
}) {}
