import { Identity, Kernel } from "@hostplane/core"
import { Duration, Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { DevAuthApi, IdentityApi } from "@hostplane/api/identity/IdentityApi"
import { noStore } from "@hostplane/api/server/NoStore"

const api = areaApi(IdentityApi, DevAuthApi)

const oauthStateMaxAge = Math.floor(Duration.toSeconds(Identity.oauthStateTtl))

/**
 * The cookie that binds an OAuth sign-in to the browser that started it (its value is the `state`). Over https it is
 * `__Host-` (Secure, Path=/, no Domain); a plain-http public URL (local development) cannot carry Secure cookies.
 */
const stateCookieOf = (publicUrl: string) => {
  const secure = publicUrl.startsWith("https://")
  return {
    name: secure ? "__Host-hostplane_oauth" : "hostplane_oauth",
    flags: (maxAge: number) => `Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure ? "; Secure" : ""}`
  }
}

export const IdentityHandlers = HttpApiBuilder.group(
  api,
  "identity",
  Effect.fn(function* (handlers) {
    const identity = yield* Identity.Identity
    const stateCookie = stateCookieOf((yield* Kernel.Settings).publicUrl)
    return handlers.handleAll({
      config: () => identity.config,
      me: () => Effect.flatMap(Effect.service(Kernel.CurrentActor), identity.me),
      idpStart: ({ query }) =>
        Effect.map(identity.startIdp(query.redirect), ({ url, state }) =>
          HttpServerResponse.redirect(url, {
            status: 302,
            headers: { "set-cookie": `${stateCookie.name}=${state}; ${stateCookie.flags(oauthStateMaxAge)}` }
          })
        ),
      idpCallback: ({ query, request }) =>
        Effect.map(identity.finishIdp({ ...query, browserState: request.cookies[stateCookie.name] }), (url) =>
          HttpServerResponse.redirect(url, {
            status: 302,
            headers: { "cache-control": "no-store", "set-cookie": `${stateCookie.name}=; ${stateCookie.flags(0)}` }
          })
        )
    })
  })
)

export const DevAuthHandlers = HttpApiBuilder.group(
  api,
  "devAuth",
  Effect.fn(function* (handlers) {
    const identity = yield* Identity.Identity
    return handlers.handleAll({ login: ({ payload }) => Effect.map(identity.devLogin(payload), noStore) })
  })
)
