import { EndUser, Identity } from "@hostplane/core"
import { Config, Effect, Layer, Option, Redacted } from "effect"
import { FetchHttpClient, HttpClient } from "effect/http"
import * as IdentityProviderOAuth from "../identity/IdentityProviderOAuth.ts"

/** Where a provider's authorize page, token endpoint and user endpoint are. */
export interface ProviderEndpoints {
  readonly authorizeUrl: string
  readonly tokenUrl: string
  readonly userinfoUrl: string
  readonly scope: string
}

/** The providers' documented endpoints. */
export const defaultEndpoints: Readonly<Record<EndUser.AuthProviderName, ProviderEndpoints>> = {
  github: {
    authorizeUrl: "https://github.com/login/oauth/authorize",
    tokenUrl: "https://github.com/login/oauth/access_token",
    userinfoUrl: "https://api.github.com/user",
    scope: "read:user user:email"
  },
  google: {
    authorizeUrl: "https://accounts.google.com/o/oauth2/v2/auth",
    tokenUrl: "https://oauth2.googleapis.com/token",
    userinfoUrl: "https://openidconnect.googleapis.com/v1/userinfo",
    scope: "openid email profile"
  },
  discord: {
    authorizeUrl: "https://discord.com/oauth2/authorize",
    tokenUrl: "https://discord.com/api/oauth2/token",
    userinfoUrl: "https://discord.com/api/users/@me",
    scope: "identify email"
  }
}

export interface Options {
  /** Endpoints instead of the providers' own (a test's loopback fake, a GitHub Enterprise server). */
  readonly endpoints?: Partial<Record<EndUser.AuthProviderName, Partial<ProviderEndpoints>>> | undefined
}

/**
 * `SocialOAuth` over an `HttpClient`: each call is the generic OAuth 2.0 client (`IdentityProviderOAuth`, code flow
 * with PKCE S256, credentials in the form body) on the provider's endpoints and the project's client id and secret.
 */
export const make = Effect.fnUntraced(function* (options: Options = {}) {
  const client = yield* HttpClient.HttpClient
  const endpointsOf = (provider: EndUser.AuthProviderName): ProviderEndpoints => ({
    ...defaultEndpoints[provider],
    ...options.endpoints?.[provider]
  })
  const providerFor = (
    provider: EndUser.AuthProviderName,
    clientId: string,
    clientSecret?: Redacted.Redacted<string>
  ): Effect.Effect<Identity.IdentityProvider["Service"], Identity.IdentityProviderError> =>
    IdentityProviderOAuth.make({ id: provider, clientId, clientSecret, ...endpointsOf(provider) }).pipe(
      Effect.provideService(HttpClient.HttpClient, client)
    )
  return EndUser.SocialOAuth.of({
    authorizeUrl: (provider, input) =>
      Effect.flatMap(providerFor(provider, input.clientId), (idp) => idp.authorizeUrl(input)),
    exchange: (provider, input) =>
      Effect.flatMap(providerFor(provider, input.clientId, input.clientSecret), (idp) => idp.exchange(input))
  })
})

export const layer = (options: Options = {}): Layer.Layer<EndUser.SocialOAuth> =>
  Layer.effect(EndUser.SocialOAuth, make(options)).pipe(Layer.provide(FetchHttpClient.layer))

const url = (name: string) =>
  Config.String(name).pipe(Config.option, Config.map(Option.filter((value) => value.trim() !== "")))

/** `SERVICE_AUTH_<GITHUB|GOOGLE|DISCORD>_<AUTHORIZE|TOKEN|USERINFO>_URL`: each one left unset keeps the provider's own. */
export const config: Config.Config<Options> = Config.all(
  Object.fromEntries(
    EndUser.authProviderNames.map((provider) => {
      const prefix = `SERVICE_AUTH_${provider.toUpperCase()}`
      return [
        provider,
        Config.all({
          authorizeUrl: url(`${prefix}_AUTHORIZE_URL`),
          tokenUrl: url(`${prefix}_TOKEN_URL`),
          userinfoUrl: url(`${prefix}_USERINFO_URL`)
        })
      ]
    })
  ) as Record<
    EndUser.AuthProviderName,
    Config.Config<Record<"authorizeUrl" | "tokenUrl" | "userinfoUrl", Option.Option<string>>>
  >
).pipe(
  Config.map((settings) => ({
    endpoints: Object.fromEntries(
      Object.entries(settings).map(([provider, urls]) => [
        provider,
        Object.fromEntries(
          Object.entries(urls).flatMap(([key, value]) => (Option.isSome(value) ? [[key, value.value]] : []))
        )
      ])
    )
  }))
)

export const layerConfig: Layer.Layer<EndUser.SocialOAuth, Config.ConfigError> = Layer.unwrap(Effect.map(config, layer))
