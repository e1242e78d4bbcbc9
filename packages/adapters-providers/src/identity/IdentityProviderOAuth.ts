import { Identity } from "@hostplane/core"
import { Config, ConfigProvider, Duration, Effect, Layer, Option, Redacted, Schedule, Schema } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest, HttpClientResponse } from "effect/http"

type Reason = Identity.IdentityProviderError["reason"]

/** How the client authenticates at the token endpoint (RFC 6749 2.3.1). */
export type ClientAuth = "client_secret_post" | "client_secret_basic"

/** A generic OAuth 2.0 provider: authorization code with PKCE S256, then the userinfo endpoint. */
export interface Options {
  /** The provider name stored on the users it signs in; default `"idp"`. */
  readonly id?: string | undefined
  readonly authorizeUrl: string | URL
  readonly tokenUrl: string | URL
  readonly userinfoUrl: string | URL
  readonly clientId: string
  /** Absent for a public client, which PKCE alone protects. */
  readonly clientSecret?: Redacted.Redacted<string> | string | undefined
  /** Space separated; default `"openid email profile"`. Empty sends no `scope`. */
  readonly scope?: string | undefined
  /** Default `client_secret_post` (credentials in the form body), which GitHub, Google and most OIDC servers take. */
  readonly clientAuth?: ClientAuth | undefined
  /** Time limit of each call to the token and userinfo endpoints; default 10 seconds. */
  readonly timeout?: Duration.Input | undefined
}

export const defaultId = "idp"
export const defaultScope = "openid email profile"
export const defaultTimeout = Duration.seconds(10)

const TokenGranted = Schema.Struct({
  access_token: Schema.String.check(Schema.isMinLength(1)),
  token_type: Schema.optional(Schema.String)
})

const TokenRefused = Schema.Struct({
  error: Schema.String,
  error_description: Schema.optional(Schema.NullOr(Schema.String))
})

const TokenAnswer = Schema.Union([TokenGranted, TokenRefused])

/** OIDC userinfo claims, and GitHub's `/user` shape (`id` number, `login`). */
const UserInfo = Schema.Struct({
  sub: Schema.optional(Schema.String),
  id: Schema.optional(Schema.Union([Schema.String, Schema.Finite])),
  email: Schema.optional(Schema.NullOr(Schema.String)),
  email_verified: Schema.optional(Schema.NullOr(Schema.Boolean)),
  name: Schema.optional(Schema.NullOr(Schema.String)),
  login: Schema.optional(Schema.NullOr(Schema.String)),
  /** Discord's `/users/@me`: `global_name` (display name), `username`, `verified` (the email). */
  global_name: Schema.optional(Schema.NullOr(Schema.String)),
  username: Schema.optional(Schema.NullOr(Schema.String)),
  verified: Schema.optional(Schema.NullOr(Schema.Boolean))
})

const failure = (reason: Reason, message: string) => new Identity.IdentityProviderError({ reason, message })

/** RFC 6749 2.3.1: client credentials are form-encoded before they go into the Basic header. */
const formEncode = (value: string) => encodeURIComponent(value).replace(/%20/g, "+")

const nonEmpty = (value: string | null | undefined): string | null =>
  value === null || value === undefined || value.trim() === "" ? null : value

const parseEndpoint = (name: string, value: string | URL): Effect.Effect<URL, Identity.IdentityProviderError> => {
  const text = value.toString()
  if (!URL.canParse(text)) return Effect.fail(failure("not_configured", `${name} is not a URL`))
  const url = new URL(text)
  return url.protocol === "https:" || url.protocol === "http:"
    ? Effect.succeed(url)
    : Effect.fail(failure("not_configured", `${name} must be an http or https URL`))
}

/** The identity provider over an `HttpClient` the host provides. */
export const make = Effect.fnUntraced(function* (options: Options) {
  const authorizeEndpoint = yield* parseEndpoint("authorizeUrl", options.authorizeUrl)
  const tokenEndpoint = yield* parseEndpoint("tokenUrl", options.tokenUrl)
  const userinfoEndpoint = yield* parseEndpoint("userinfoUrl", options.userinfoUrl)
  if (options.clientId.trim() === "") return yield* failure("not_configured", "clientId is empty")

  const id = nonEmpty(options.id) ?? defaultId
  const scope = (options.scope ?? defaultScope).trim()
  const clientAuth = options.clientAuth ?? "client_secret_post"
  const secret =
    options.clientSecret === undefined
      ? Option.none<Redacted.Redacted<string>>()
      : Option.some(
          Redacted.isRedacted(options.clientSecret) ? options.clientSecret : Redacted.make(options.clientSecret)
        )
  const timeout = options.timeout ?? defaultTimeout

  const client = (yield* HttpClient.HttpClient).pipe(
    HttpClient.mapRequest((request) =>
      request.pipe(HttpClientRequest.acceptJson, HttpClientRequest.setHeader("user-agent", "hostplane"))
    )
  )
  const userinfoClient = client.pipe(
    HttpClient.retryTransient({ retryOn: "errors-and-responses", times: 2, schedule: Schedule.exponential(200) })
  )

  const withTimeout =
    (endpoint: string) =>
    <A>(effect: Effect.Effect<A, Identity.IdentityProviderError>) =>
      Effect.timeoutOrElse(effect, {
        duration: timeout,
        orElse: () =>
          Effect.fail(
            failure(
              "unavailable",
              `the ${endpoint} endpoint did not answer within ${Duration.format(Duration.fromInputUnsafe(timeout))}`
            )
          )
      })

  const unreachable = (endpoint: string) => (error: { readonly message: string }) =>
    failure("unavailable", `the ${endpoint} endpoint is unreachable: ${error.message}`)

  /** Reads a JSON body; an unreadable one fails with `reason`, a broken connection is `unavailable`. */
  const readJson = <S extends Schema.Constraint & { readonly DecodingServices: never }>(
    endpoint: string,
    schema: S,
    reason: Reason,
    response: HttpClientResponse.HttpClientResponse
  ): Effect.Effect<S["Type"], Identity.IdentityProviderError> =>
    HttpClientResponse.schemaBodyJson(schema)(response).pipe(
      Effect.mapError((error) =>
        error._tag === "HttpClientError" && error.reason._tag === "TransportError"
          ? unreachable(endpoint)(error)
          : failure(reason, `the ${endpoint} endpoint sent an unreadable answer (status ${response.status})`)
      )
    )

  const temporary = (status: number) => status >= 500 || status === 429

  const authorizeUrl = Effect.fn("IdentityProviderOAuth.authorizeUrl")(function* (input: {
    readonly state: string
    readonly codeChallenge: string
    readonly redirectUri: string
  }) {
    const url = new URL(authorizeEndpoint)
    url.searchParams.set("response_type", "code")
    url.searchParams.set("client_id", options.clientId)
    url.searchParams.set("redirect_uri", input.redirectUri)
    if (scope !== "") url.searchParams.set("scope", scope)
    url.searchParams.set("state", input.state)
    url.searchParams.set("code_challenge", input.codeChallenge)
    url.searchParams.set("code_challenge_method", "S256")
    return url.toString()
  })

  const requestToken = Effect.fn("IdentityProviderOAuth.requestToken")(function* (input: {
    readonly code: string
    readonly codeVerifier: string
    readonly redirectUri: string
  }) {
    const form: Record<string, string> = {
      grant_type: "authorization_code",
      code: input.code,
      redirect_uri: input.redirectUri,
      code_verifier: input.codeVerifier
    }
    let request = HttpClientRequest.post(tokenEndpoint)
    if (clientAuth === "client_secret_basic" && Option.isSome(secret)) {
      request = HttpClientRequest.basicAuth(
        request,
        formEncode(options.clientId),
        Redacted.make(formEncode(Redacted.value(secret.value)))
      )
    } else {
      form.client_id = options.clientId
      if (Option.isSome(secret)) form.client_secret = Redacted.value(secret.value)
    }
    const response = yield* client
      .execute(HttpClientRequest.bodyUrlParams(request, form))
      .pipe(Effect.mapError(unreachable("token")))
    if (temporary(response.status)) {
      return yield* failure("unavailable", `the token endpoint answered ${response.status}`)
    }
    const answer = yield* readJson("token", TokenAnswer, "exchange_failed", response)
    if ("error" in answer) {
      const description = nonEmpty(answer.error_description)
      const misconfigured = answer.error === "invalid_client" || answer.error === "unauthorized_client"
      return yield* failure(
        misconfigured ? "not_configured" : "exchange_failed",
        `the token endpoint refused the code: ${answer.error}${description === null ? "" : ` (${description.slice(0, 200)})`}`
      )
    }
    if (response.status < 200 || response.status >= 300) {
      return yield* failure("exchange_failed", `the token endpoint answered ${response.status}`)
    }
    if (answer.token_type !== undefined && answer.token_type.toLowerCase() !== "bearer") {
      return yield* failure("exchange_failed", `the token endpoint issued an unsupported token type`)
    }
    return Redacted.make(answer.access_token)
  }, withTimeout("token"))

  const readUserinfo = Effect.fn("IdentityProviderOAuth.readUserinfo")(function* (
    accessToken: Redacted.Redacted<string>
  ) {
    const response = yield* userinfoClient
      .execute(HttpClientRequest.bearerToken(HttpClientRequest.get(userinfoEndpoint), accessToken))
      .pipe(Effect.mapError(unreachable("userinfo")))
    if (temporary(response.status)) {
      return yield* failure("unavailable", `the userinfo endpoint answered ${response.status}`)
    }
    if (response.status < 200 || response.status >= 300) {
      return yield* failure("userinfo_failed", `the userinfo endpoint answered ${response.status}`)
    }
    const info = yield* readJson("userinfo", UserInfo, "userinfo_failed", response)
    const subject = nonEmpty(info.sub) ?? (info.id === undefined ? null : nonEmpty(String(info.id)))
    if (subject === null) {
      return yield* failure("userinfo_failed", "the userinfo answer has no subject (`sub` or `id`)")
    }
    const identity: Identity.VerifiedIdentity = {
      provider: id,
      subject,
      email: info.email_verified === false || info.verified === false ? null : nonEmpty(info.email),
      name: nonEmpty(info.name) ?? nonEmpty(info.global_name) ?? nonEmpty(info.login) ?? nonEmpty(info.username)
    }
    return identity
  }, withTimeout("userinfo"))

  const exchange = Effect.fn("IdentityProviderOAuth.exchange")(function* (input: {
    readonly code: string
    readonly codeVerifier: string
    readonly redirectUri: string
  }) {
    const accessToken = yield* requestToken(input)
    return yield* readUserinfo(accessToken)
  })

  return Identity.IdentityProvider.of({ id, enabled: true, authorizeUrl, exchange })
})

/** The identity provider over `fetch`; fails to build with `not_configured` when an endpoint is not an http(s) URL. */
export const layer = (options: Options): Layer.Layer<Identity.IdentityProvider, Identity.IdentityProviderError> =>
  Layer.effect(Identity.IdentityProvider, make(options)).pipe(Layer.provide(FetchHttpClient.layer))

const setting = (name: string) =>
  Config.String(name).pipe(Config.option, Config.map(Option.filter((value) => value.trim() !== "")))

/**
 * The `SERVICE_IDP_*` settings: `None` when none of the endpoints and client id are set (the server then runs without
 * an identity provider); a config error when only some are, or when an endpoint is not an http(s) URL.
 */
export const config: Config.Config<Option.Option<Options>> = Config.all({
  id: setting("SERVICE_IDP_ID"),
  authorizeUrl: setting("SERVICE_IDP_AUTHORIZE_URL"),
  tokenUrl: setting("SERVICE_IDP_TOKEN_URL"),
  userinfoUrl: setting("SERVICE_IDP_USERINFO_URL"),
  clientId: setting("SERVICE_IDP_CLIENT_ID"),
  clientSecret: Config.Redacted("SERVICE_IDP_CLIENT_SECRET").pipe(
    Config.option,
    Config.map(Option.filter((value) => Redacted.value(value) !== ""))
  ),
  scope: Config.option(Config.String("SERVICE_IDP_SCOPE")),
  clientAuth: Config.option(Config.Literals(["client_secret_post", "client_secret_basic"], "SERVICE_IDP_CLIENT_AUTH")),
  timeout: Config.option(Config.Duration("SERVICE_IDP_TIMEOUT"))
}).pipe(
  Config.flatMap((env): Config.Config<Option.Option<Options>> => {
    const needed = {
      SERVICE_IDP_AUTHORIZE_URL: env.authorizeUrl,
      SERVICE_IDP_TOKEN_URL: env.tokenUrl,
      SERVICE_IDP_USERINFO_URL: env.userinfoUrl,
      SERVICE_IDP_CLIENT_ID: env.clientId
    }
    const missing = Object.entries(needed).filter(([, value]) => Option.isNone(value))
    if (missing.length === Object.keys(needed).length) return Config.succeed(Option.none())
    if (missing.length > 0) {
      const names = missing.map(([name]) => name).join(", ")
      return Config.fail(new ConfigProvider.SourceError({ message: `an identity provider needs ${names} as well` }))
    }
    const value = (setting: Option.Option<string>) => Option.getOrElse(setting, () => "")
    for (const name of ["SERVICE_IDP_AUTHORIZE_URL", "SERVICE_IDP_TOKEN_URL", "SERVICE_IDP_USERINFO_URL"] as const) {
      const text = value(needed[name])
      if (!URL.canParse(text) || !["http:", "https:"].includes(new URL(text).protocol)) {
        return Config.fail(new ConfigProvider.SourceError({ message: `${name} must be an http or https URL` }))
      }
    }
    const options: Options = {
      id: Option.getOrElse(env.id, () => defaultId),
      authorizeUrl: value(env.authorizeUrl),
      tokenUrl: value(env.tokenUrl),
      userinfoUrl: value(env.userinfoUrl),
      clientId: value(env.clientId),
      clientSecret: Option.getOrUndefined(env.clientSecret),
      scope: Option.getOrElse(env.scope, () => defaultScope),
      clientAuth: Option.getOrUndefined(env.clientAuth),
      timeout: Option.getOrUndefined(env.timeout)
    }
    return Config.succeed(Option.some(options))
  })
)

/** `IdentityProvider` from the `SERVICE_IDP_*` settings when they are set, else `IdentityProvider.off`. */
export const layerConfig: Layer.Layer<Identity.IdentityProvider, Config.ConfigError | Identity.IdentityProviderError> =
  Layer.unwrap(Effect.map(config, Option.match({ onNone: () => Identity.IdentityProvider.off, onSome: layer })))
