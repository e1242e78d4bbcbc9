import { Duration, Effect, Layer, Option, Schema } from "effect"
import { Databases } from "@hostplane/core/database/Databases"
import { type EdgeAnswer, type EdgeCookie, type EdgeRequest, EdgeSignIn } from "../edge/Edge.ts"
import { safeNextPath } from "@hostplane/core/access/AccessRules"
import { pkceChallenge } from "@hostplane/core/identity/Identity"
import type { ProjectId } from "@hostplane/core/kernel/Ids"
import { portOn } from "@hostplane/core/kernel/Port"
import { isoAfter, nowIso } from "@hostplane/core/kernel/Time"
import { Tokens } from "@hostplane/core/kernel/Tokens"
import type { AuthProviderName } from "@hostplane/core/enduser/EndUserAuth"
import { type AuthConfig, EndUserAuths } from "@hostplane/core/enduser/EndUserAuths"
import { EndUserDirectory, SocialOAuth } from "@hostplane/core/enduser/EndUserPorts"

/** The end user's session cookie: only the SHA-256 of its value is stored, in the project's database. */
export const authSessionCookie = "__Host-service_auth"

/** The sign-in in progress: provider, state and PKCE verifier, bound to the browser that started it. */
export const authFlowCookie = "__Host-service_auth_flow"

/** How long a visitor has to come back from the provider. */
export const authFlowTtl = Duration.minutes(10)

/** Where every provider sends the visitor back (spec 4.9): register it for each host of `AuthStatus.hosts`. */
export const callbackUrl = (host: string, provider: AuthProviderName): string =>
  `https://${host}/__service/auth/callback/${provider}`

const Flow = Schema.Struct({
  provider: Schema.String,
  state: Schema.String,
  verifier: Schema.String,
  next: Schema.String
})
const decodeFlow = Schema.decodeUnknownOption(Schema.fromJsonString(Flow))

const toBase64Url = (text: string) =>
  btoa(String.fromCharCode(...new TextEncoder().encode(text)))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "")

const fromBase64Url = (text: string): string | undefined => {
  try {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"))
    return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)))
  } catch {
    return undefined
  }
}

/** Compares two strings without stopping at the first difference. */
const sameText = (a: string, b: string) => {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return diff === 0
}

const problem = (status: number, code: string, message: string, cookies?: ReadonlyArray<EdgeCookie>): EdgeAnswer => ({
  _tag: "Json",
  status,
  body: { code, message },
  ...(cookies === undefined ? {} : { cookies })
})

type Registered = AuthConfig["providers"][number]

const clearFlow: EdgeCookie = { name: authFlowCookie, value: "", maxAge: 0 }

/**
 * The auth system worker the edge runs on a granted project's hosts (spec 4.9): `/__service/auth/login/<provider>`
 * starts the provider's code flow with PKCE and a state bound to the browser by a cookie, `callback/<provider>`
 * finishes it and opens a session in the project's database (HttpOnly cookie, `sessionDays`), `me` answers the user
 * of the session, `logout` ends it. Answers none when auth is not granted: the edge then passes the path through to
 * the deployment.
 */
export const layer = Layer.effect(
  EdgeSignIn,
  Effect.gen(function* () {
    const auths = yield* EndUserAuths
    const databases = yield* Databases
    const tokens = yield* Tokens
    const oauth = portOn(yield* SocialOAuth)
    const directory = portOn(yield* EndUserDirectory)

    const unavailable = problem(503, "auth_unavailable", "sign-in is not available on this node")

    /** The project's database as the worker connects to it; none while the node cannot serve it. */
    const databaseOf = (projectId: ProjectId) => databases.binding(projectId)

    const login = Effect.fnUntraced(function* (
      request: EdgeRequest,
      config: AuthConfig,
      registered: Registered,
      query: URLSearchParams
    ) {
      const provider = registered.provider
      if (Option.isNone(oauth)) return unavailable
      const next = query.get("next") ?? "/"
      const state = yield* tokens.secret(32)
      const verifier = yield* tokens.secret(32)
      const location = yield* oauth.value
        .authorizeUrl(provider, {
          clientId: registered.clientId,
          state,
          codeChallenge: yield* pkceChallenge(verifier),
          redirectUri: callbackUrl(request.host, provider)
        })
        .pipe(Effect.option)
      if (Option.isNone(location)) return unavailable
      const flow = JSON.stringify({ provider, state, verifier, next: safeNextPath(next) ? next : "/" })
      return {
        _tag: "Redirect",
        location: location.value,
        cookies: [
          { name: authFlowCookie, value: toBase64Url(flow), maxAge: Math.floor(Duration.toSeconds(authFlowTtl)) }
        ]
      } satisfies EdgeAnswer
    })

    const callback = Effect.fnUntraced(function* (
      request: EdgeRequest,
      config: AuthConfig,
      registered: Registered,
      query: URLSearchParams
    ) {
      const provider = registered.provider
      const raw = request.cookies?.[authFlowCookie]
      const flow = raw === undefined ? Option.none() : decodeFlow(fromBase64Url(raw) ?? "")
      const state = query.get("state") ?? ""
      // A state and code planted in another browser would sign it in as someone else: the cookie must match.
      if (
        Option.isNone(flow) ||
        flow.value.provider !== provider ||
        state === "" ||
        !sameText(flow.value.state, state)
      ) {
        return problem(400, "state_mismatch", "this sign-in was not started in this browser: start again", [clearFlow])
      }
      const error = query.get("error")
      if (error !== null && error !== "") {
        return problem(403, "access_denied", `the provider refused the sign-in (${error.slice(0, 100)})`, [clearFlow])
      }
      const code = query.get("code") ?? ""
      if (code === "") return problem(400, "bad_request", "the provider sent no code", [clearFlow])
      if (Option.isNone(oauth) || Option.isNone(directory)) return unavailable
      const identity = yield* oauth.value
        .exchange(provider, {
          clientId: registered.clientId,
          clientSecret: registered.clientSecret,
          code,
          codeVerifier: flow.value.verifier,
          redirectUri: callbackUrl(request.host, provider)
        })
        .pipe(Effect.result)
      if (identity._tag === "Failure") {
        yield* Effect.logWarning("end-user sign-in failed at the provider", {
          provider,
          reason: identity.failure.reason
        })
        return problem(502, "provider_error", "the provider did not complete the sign-in", [clearFlow])
      }
      const db = yield* databaseOf(config.projectId)
      if (db === null) return unavailable
      const token = yield* tokens.secret(32)
      const sessionTtl = Duration.days(config.settings.sessionDays)
      const user = yield* directory.value
        .signIn(
          db,
          { ...identity.success, provider },
          {
            allowSignups: config.settings.allowSignups,
            tokenHash: yield* tokens.hash(token),
            expiresAt: yield* isoAfter(sessionTtl),
            now: yield* nowIso
          }
        )
        .pipe(Effect.option)
      if (Option.isNone(user)) return unavailable
      if (Option.isNone(user.value)) {
        return problem(403, "signups_closed", "this site takes no new accounts", [clearFlow])
      }
      return {
        _tag: "Redirect",
        location: flow.value.next,
        cookies: [
          clearFlow,
          { name: authSessionCookie, value: token, maxAge: Math.floor(Duration.toSeconds(sessionTtl)) }
        ]
      } satisfies EdgeAnswer
    })

    const sessionUser = Effect.fnUntraced(function* (request: EdgeRequest, config: AuthConfig) {
      const token = request.cookies?.[authSessionCookie]
      if (token === undefined || token === "" || Option.isNone(directory)) return Option.none()
      const db = yield* databaseOf(config.projectId)
      if (db === null) return Option.none()
      return yield* directory.value
        .session(db, yield* tokens.hash(token), yield* nowIso)
        .pipe(Effect.orElseSucceed(() => Option.none()))
    })

    const handle = Effect.fn("AuthWorker.handle")(function* (request: EdgeRequest, projectId: ProjectId, url: URL) {
      const config = yield* auths.config(projectId)
      if (Option.isNone(config)) return Option.none<EdgeAnswer>()
      const [action = "", provider = "", ...rest] = url.pathname.slice("/__service/auth/".length).split("/")
      const answer = yield* Effect.gen(function* () {
        if ((action === "login" || action === "callback") && rest.length === 0 && request.method === "GET") {
          const registered = config.value.providers.find((entry) => entry.provider === provider)
          if (registered === undefined) return problem(404, "not_found", `sign-in with ${provider} is not set up here`)
          const step = action === "login" ? login : callback
          return yield* step(request, config.value, registered, url.searchParams)
        }
        if (action === "me" && provider === "" && request.method === "GET") {
          const user = yield* sessionUser(request, config.value)
          return Option.isSome(user)
            ? ({ _tag: "Json", status: 200, body: user.value } satisfies EdgeAnswer)
            : problem(401, "unauthorized", "not signed in")
        }
        if (action === "logout" && provider === "" && (request.method === "POST" || request.method === "GET")) {
          const token = request.cookies?.[authSessionCookie]
          const db = yield* databaseOf(projectId)
          if (token !== undefined && token !== "" && db !== null && Option.isSome(directory)) {
            yield* directory.value.signOut(db, yield* tokens.hash(token)).pipe(Effect.ignore)
          }
          const next = url.searchParams.get("next") ?? "/"
          return {
            _tag: "Redirect",
            location: safeNextPath(next) ? next : "/",
            cookies: [{ name: authSessionCookie, value: "", maxAge: 0 }]
          } satisfies EdgeAnswer
        }
        return problem(404, "not_found", `no sign-in route ${url.pathname}`)
      })
      return Option.some(answer)
    })

    return EdgeSignIn.of({ handle })
  })
)
