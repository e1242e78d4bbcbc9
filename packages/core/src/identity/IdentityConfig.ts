import { Config, Context, Duration, Effect, Layer } from "effect"
import { optionalSetting, settingList, Settings } from "../kernel/Settings.ts"

/** The sign-in settings of decisions.md part 2. */
export interface IdentityConfigShape {
  /** Registers `POST /v1/auth/dev/login`. */
  readonly devAuth: boolean
  /** Allowed client redirect prefixes of the OAuth sign-in; by default the public URL. */
  readonly oauthRedirects: ReadonlyArray<string>
  readonly sessionTtl: Duration.Duration
}

/** Sign-in settings; defaults follow the shared `Settings` (the redirects default to the public URL). */
export class IdentityConfig extends Context.Service<IdentityConfig, IdentityConfigShape>()(
  "@hostplane/core/identity/IdentityConfig"
) {
  static readonly make = (overrides: Partial<IdentityConfigShape> = {}) =>
    Layer.effect(
      IdentityConfig,
      Effect.map(Effect.service(Settings), (settings) => ({
        devAuth: false,
        oauthRedirects: [settings.publicUrl],
        sessionTtl: Duration.days(30),
        ...overrides
      }))
    )

  /** `SERVICE_ENABLE_DEV_AUTH` (else `devAuthDefault`: on only in the embedded mode), `SERVICE_OAUTH_REDIRECTS`, `SERVICE_SESSION_TTL`. */
  static readonly layerConfig = (options: { readonly devAuthDefault: boolean }) =>
    Layer.unwrap(
      Effect.gen(function* () {
        const env = yield* Config.all({
          devAuth: Config.option(Config.Boolean("SERVICE_ENABLE_DEV_AUTH")),
          oauthRedirects: optionalSetting("SERVICE_OAUTH_REDIRECTS"),
          sessionTtl: Config.option(Config.Duration("SERVICE_SESSION_TTL"))
        })
        const overrides: { -readonly [K in keyof IdentityConfigShape]?: IdentityConfigShape[K] } = {
          devAuth: env.devAuth._tag === "Some" ? env.devAuth.value : options.devAuthDefault
        }
        if (env.oauthRedirects._tag === "Some") overrides.oauthRedirects = settingList(env.oauthRedirects.value)
        if (env.sessionTtl._tag === "Some") overrides.sessionTtl = env.sessionTtl.value
        return IdentityConfig.make(overrides)
      })
    )
}
