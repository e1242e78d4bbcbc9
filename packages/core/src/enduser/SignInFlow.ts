import { Context, Duration, Effect, Layer, Option, Schema } from "effect"
import { safeNextPath } from "../access/AccessRules.ts"
import { Databases } from "../database/Databases.ts"
import { AuthUnavailable, NotFound } from "../errors/Errors.ts"
import { pkceChallenge } from "../identity/Identity.ts"
import { makeId, type ProjectId } from "../kernel/Ids.ts"
import { portOn } from "../kernel/Port.ts"
import { isoAfter, nowIso } from "../kernel/Time.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { ProjectStore } from "../projects/ProjectStore.ts"
import type { AuthProviderName } from "./EndUserAuth.ts"
import { type AuthConfig, EndUserAuths } from "./EndUserAuths.ts"
import { type EndUser, EndUserDirectory, SocialOAuth } from "./EndUserPorts.ts"

/** A cookie a sign-in answer sets (host-only, `Path=/`, Secure, HttpOnly, SameSite=Lax); `maxAge` 0 removes it. */
export interface SignInCookie {
  readonly name: string
  readonly value: string
  readonly maxAge: number
}

/** What the sign-in worker answers: a redirect (to the provider, or back to `next`) or a JSON body, with cookies. */
export type SignInAnswer =
  | { readonly _tag: "Redirect"; readonly location: string; readonly cookies: ReadonlyArray<SignInCookie> }
  | {
      readonly _tag: "Json"
      readonly status: number
      readonly body: unknown
      readonly cookies?: ReadonlyArray<SignInCookie>
    }

/** What the sign-in worker reads of a request: its host, method and the visitor's cookies (its own two). */
export interface SignInRequest {
  readonly host: string
  readonly method: string
  readonly cookies?: Readonly<Record<string, string>> | undefined
}

const cookieSchema = Schema.Struct({ name: Schema.String, value: Schema.String, maxAge: Schema.Int })

/**
 * `POST /v1/node/auth/signin`: a request to `/__service/auth/*` on a project's host, with the sign-in's own cookies
 * only (the flow and the session). `url` is the path and query as the visitor sent them.
 */
export const NodeSignIn = Schema.Struct({
  projectId: Schema.String,
  host: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(253)),
  method: Schema.String.check(Schema.isMaxLength(16)),
  url: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(8192)),
  flow: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(4096))),
  session: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(256)))
})
export type NodeSignIn = typeof NodeSignIn.Type

/** The sign-in worker's answer for a node to send as it is; `null`: not granted, the path is the deployment's. */
export const NodeSignedIn = Schema.Struct({
  answer: Schema.NullOr(
    Schema.Union([
      Schema.Struct({ _tag: Schema.Literal("Redirect"), location: Schema.String, cookies: Schema.Array(cookieSchema) }),
      Schema.Struct({
        _tag: Schema.Literal("Json"),
        status: Schema.Int,
        body: Schema.Unknown,
        cookies: Schema.optionalKey(Schema.Array(cookieSchema))
      })
    ])
  )
})
export type NodeSignedIn = typeof NodeSignedIn.Type

/** `POST /v1/node/auth/user`: the end user of a session cookie a worker's request carried (`env.auth.user`). */
export const NodeEndUserQuery = Schema.Struct({
  projectId: Schema.String,
  session: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(256))
})
export type NodeEndUserQuery = typeof NodeEndUserQuery.Type

export const NodeEndUser = Schema.Struct({
  user: Schema.NullOr(
    Schema.Struct({
      id: Schema.String,
      email: Schema.NullOr(Schema.String),
      name: Schema.NullOr(Schema.String),
      provider: Schema.String
    })
  )
})
export type NodeEndUser = typeof NodeEndUser.Type

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

const problem = (
  status: number,
  code: string,
  message: string,
  cookies?: ReadonlyArray<SignInCookie>
): SignInAnswer => ({
  _tag: "Json",
  status,
  body: { code, message },
  ...(cookies === undefined ? {} : { cookies })
})

type Registered = AuthConfig["providers"][number]

const clearFlow: SignInCookie = { name: authFlowCookie, value: "", maxAge: 0 }

/**
 * The auth system worker every edge runs on a granted project's hosts (spec 4.9), in process on the control plane's
 * own edge and over the node API (`/v1/node/auth/*`) for a node on another machine, which holds neither the providers'
 * client secrets nor the project databases' sessions: `/__service/auth/login/<provider>` starts the provider's code
 * flow with PKCE and a state bound to the browser by a cookie, `callback/<provider>` finishes it and opens a session in
 * the project's database (HttpOnly cookie, `sessionDays`), `me` answers the user of the session, `logout` ends it.
 * `handle` answers none when auth is not granted: the edge then passes the path through to the deployment.
 */
export class SignInFlow extends Context.Service<
  SignInFlow,
  {
    readonly handle: (
      request: SignInRequest,
      projectId: ProjectId,
      url: URL
    ) => Effect.Effect<Option.Option<SignInAnswer>>
    /** `handle` for a project named by id alone, as a node asks it; unknown or deleted: 404. */
    readonly handleFor: (input: NodeSignIn) => Effect.Effect<Option.Option<SignInAnswer>, NotFound>
    /**
     * The end user of a session cookie a worker's request carried (`env.auth.user` on a node on another machine): none
     * when not signed in or sign-in is not granted; unknown or deleted project: 404; the project's database not
     * answering: 503 `auth_unavailable`.
     */
    readonly userFor: (input: NodeEndUserQuery) => Effect.Effect<Option.Option<EndUser>, NotFound | AuthUnavailable>
  }
>()("@hostplane/core/enduser/SignInFlow") {
  static readonly layer = Layer.effect(
    SignInFlow,
    Effect.gen(function* () {
      const auths = yield* EndUserAuths
      const databases = yield* Databases
      const tokens = yield* Tokens
      const oauth = portOn(yield* SocialOAuth)
      const directory = portOn(yield* EndUserDirectory)
      const projects = yield* ProjectStore
      const unavailable = problem(503, "auth_unavailable", "sign-in is not available on this node")

      /** The project's database as the worker connects to it; none while the node cannot serve it. */
      const databaseOf = (projectId: ProjectId) => databases.binding(projectId)

      const login = Effect.fnUntraced(function* (
        request: SignInRequest,
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
        } satisfies SignInAnswer
      })

      const callback = Effect.fnUntraced(function* (
        request: SignInRequest,
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
          return problem(400, "state_mismatch", "this sign-in was not started in this browser: start again", [
            clearFlow
          ])
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
        } satisfies SignInAnswer
      })

      const sessionUser = Effect.fnUntraced(function* (request: SignInRequest, config: AuthConfig) {
        const token = request.cookies?.[authSessionCookie]
        if (token === undefined || token === "" || Option.isNone(directory)) return Option.none()
        const db = yield* databaseOf(config.projectId)
        if (db === null) return Option.none()
        return yield* directory.value
          .session(db, yield* tokens.hash(token), yield* nowIso)
          .pipe(Effect.orElseSucceed(() => Option.none()))
      })

      const handle = Effect.fn("SignInFlow.handle")(function* (request: SignInRequest, projectId: ProjectId, url: URL) {
        const config = yield* auths.config(projectId)
        if (Option.isNone(config)) return Option.none<SignInAnswer>()
        const [action = "", provider = "", ...rest] = url.pathname.slice("/__service/auth/".length).split("/")
        const answer = yield* Effect.gen(function* () {
          if ((action === "login" || action === "callback") && rest.length === 0 && request.method === "GET") {
            const registered = config.value.providers.find((entry) => entry.provider === provider)
            if (registered === undefined)
              return problem(
                404,
                "not_found",
                provider === ""
                  ? `name a provider: /__service/auth/${action}/<provider>`
                  : `sign-in with ${provider} is not set up here`
              )
            const step = action === "login" ? login : callback
            return yield* step(request, config.value, registered, url.searchParams)
          }
          if (action === "me" && provider === "" && request.method === "GET") {
            const user = yield* sessionUser(request, config.value)
            return Option.isSome(user)
              ? ({ _tag: "Json", status: 200, body: user.value } satisfies SignInAnswer)
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
            } satisfies SignInAnswer
          }
          return problem(404, "not_found", `no sign-in route ${url.pathname}`)
        })
        return Option.some(answer)
      })

      /** A live project by the id a node names; a deleted one is gone for the node too. */
      const projectOf = Effect.fnUntraced(function* (projectId: string) {
        const row = yield* projects.findById(makeId("prj", projectId))
        if (Option.isNone(row) || row.value.deletingSince !== null) {
          return yield* new NotFound({ message: `project ${projectId} not found` })
        }
        return row.value.id
      })

      const handleFor = Effect.fn("SignInFlow.handleFor")(function* (input: NodeSignIn) {
        const projectId = yield* projectOf(input.projectId)
        const cookies: Record<string, string> = {}
        if (input.flow !== undefined) cookies[authFlowCookie] = input.flow
        if (input.session !== undefined) cookies[authSessionCookie] = input.session
        // The same base the edge parses a request's path against.
        const url = new URL(input.url, "http://edge.invalid")
        return yield* handle({ host: input.host, method: input.method, cookies }, projectId, url)
      })

      const userFor = Effect.fn("SignInFlow.userFor")(function* (input: NodeEndUserQuery) {
        const projectId = yield* projectOf(input.projectId)
        if (Option.isNone(directory) || Option.isNone(yield* auths.config(projectId))) return Option.none<EndUser>()
        const db = yield* databaseOf(projectId)
        if (db === null) return Option.none<EndUser>()
        return yield* directory.value
          .session(db, yield* tokens.hash(input.session), yield* nowIso)
          .pipe(
            Effect.mapError(
              (error) => new AuthUnavailable({ message: `the project's database did not answer: ${error.message}` })
            )
          )
      })

      return SignInFlow.of({ handle, handleFor, userFor })
    })
  )
}
