import { createHash, randomBytes } from "node:crypto"
import { IdentityProviderOAuth } from "@hostplane/adapters-providers"
import { Identity } from "@hostplane/core"
import { FakeIdentityProvider, type FakeIdpOptions } from "@hostplane/testkit"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option, Redacted } from "effect"
import { FetchHttpClient } from "effect/http"
import { TestClock } from "effect/testing"

const redirectUri = "http://127.0.0.1:9/v1/auth/idp/callback"

const pkce = () => {
  const codeVerifier = randomBytes(32).toString("base64url")
  return { codeVerifier, codeChallenge: createHash("sha256").update(codeVerifier).digest("base64url") }
}

/** Starts the fake and the adapter pointed at it. */
const setup = Effect.fnUntraced(function* (
  fakeOptions: FakeIdpOptions = {},
  adapterOptions: Partial<IdentityProviderOAuth.Options> = {}
) {
  const fake = yield* FakeIdentityProvider.make(fakeOptions)
  const idp = yield* IdentityProviderOAuth.make({
    id: "fake",
    authorizeUrl: fake.authorizeUrl,
    tokenUrl: fake.tokenUrl,
    userinfoUrl: fake.userinfoUrl,
    clientId: fake.clientId,
    clientSecret: fake.clientSecret === null ? undefined : Redacted.make(fake.clientSecret),
    ...adapterOptions
  }).pipe(Effect.orDie, Effect.provide(FetchHttpClient.layer))
  return { fake, idp }
})

/** What the browser does: open the authorize URL, and read the 302 back to the client. */
const signInAt = (authorizeUrl: string) =>
  Effect.promise(() => fetch(authorizeUrl, { redirect: "manual" })).pipe(
    Effect.map((response) => {
      assert.strictEqual(response.status, 302)
      const location = new URL(response.headers.get("location") ?? "")
      return { location, query: Object.fromEntries(location.searchParams) }
    })
  )

/** Authorize with a fresh PKCE pair and state; answers the code and the verifier. */
const authorize = Effect.fnUntraced(function* (idp: Identity.IdentityProvider["Service"]) {
  const { codeVerifier, codeChallenge } = pkce()
  const state = randomBytes(16).toString("base64url")
  const url = yield* idp.authorizeUrl({ state, codeChallenge, redirectUri })
  const { query } = yield* signInAt(url)
  assert.strictEqual(query.state, state)
  assert.isString(query.code)
  return { code: query.code ?? "", codeVerifier }
})

describe("IdentityProviderOAuth", () => {
  it.effect("authorize -> code -> exchange signs in the provider's user", () =>
    Effect.gen(function* () {
      const { fake, idp } = yield* setup({ user: { subject: "ada", email: "ada@example.test", name: "Ada" } })
      const { codeVerifier, codeChallenge } = pkce()
      const url = new URL(yield* idp.authorizeUrl({ state: "st-1", codeChallenge, redirectUri }))
      assert.strictEqual(`${url.origin}${url.pathname}`, fake.authorizeUrl)
      assert.deepStrictEqual(Object.fromEntries(url.searchParams), {
        response_type: "code",
        client_id: fake.clientId,
        redirect_uri: redirectUri,
        scope: "openid email profile",
        state: "st-1",
        code_challenge: codeChallenge,
        code_challenge_method: "S256"
      })

      const { location, query } = yield* signInAt(url.toString())
      assert.strictEqual(`${location.origin}${location.pathname}`, redirectUri)
      assert.strictEqual(query.state, "st-1")

      const identity = yield* idp.exchange({ code: query.code ?? "", codeVerifier, redirectUri })
      assert.deepStrictEqual(identity, { provider: "fake", subject: "ada", email: "ada@example.test", name: "Ada" })

      const requests = yield* fake.requests
      const token = requests.find((r) => r.endpoint === "token")
      assert.strictEqual(token?.status, 200)
      assert.strictEqual(token?.auth, "post")
      assert.deepStrictEqual(
        { ...token?.params },
        {
          grant_type: "authorization_code",
          code: query.code ?? "",
          redirect_uri: redirectUri,
          code_verifier: codeVerifier,
          client_id: fake.clientId,
          client_secret: "<redacted>"
        }
      )
      assert.strictEqual(requests.find((r) => r.endpoint === "userinfo")?.auth, "bearer")
      assert.deepStrictEqual(yield* fake.stats, {
        authorize: 1,
        token: 1,
        userinfo: 1,
        codesIssued: 1,
        codesRedeemed: 1,
        tokensIssued: 1
      })
    })
  )

  it.effect("the user chosen by the test is the one signed in", () =>
    Effect.gen(function* () {
      const { fake, idp } = yield* setup()
      yield* fake.signIn({ subject: "grace", email: null, name: "Grace" })
      const first = yield* authorize(idp)
      assert.strictEqual((yield* idp.exchange({ ...first, redirectUri })).subject, "grace")
      yield* fake.signIn({ subject: "linus", email: "linus@example.test" })
      const second = yield* authorize(idp)
      assert.deepStrictEqual(yield* idp.exchange({ ...second, redirectUri }), {
        provider: "fake",
        subject: "linus",
        email: "linus@example.test",
        name: null
      })
    })
  )

  it.effect("a wrong code_verifier is refused", () =>
    Effect.gen(function* () {
      const { fake, idp } = yield* setup()
      const { code } = yield* authorize(idp)
      const error = yield* Effect.flip(idp.exchange({ code, codeVerifier: pkce().codeVerifier, redirectUri }))
      assert.strictEqual(error._tag, "IdentityProviderError")
      assert.strictEqual(error.reason, "exchange_failed")
      assert.include(error.message, "invalid_grant")
      assert.strictEqual((yield* fake.stats).tokensIssued, 0)
    })
  )

  it.effect("a reused code is refused", () =>
    Effect.gen(function* () {
      const { fake, idp } = yield* setup()
      const grant = yield* authorize(idp)
      yield* idp.exchange({ ...grant, redirectUri })
      const error = yield* Effect.flip(idp.exchange({ ...grant, redirectUri }))
      assert.strictEqual(error.reason, "exchange_failed")
      assert.include(error.message, "invalid_grant")
      assert.strictEqual((yield* fake.stats).codesRedeemed, 1)
    })
  )

  it.effect("a code sent with another redirect_uri is refused", () =>
    Effect.gen(function* () {
      const { idp } = yield* setup()
      const grant = yield* authorize(idp)
      const error = yield* Effect.flip(idp.exchange({ ...grant, redirectUri: "http://127.0.0.1:9/elsewhere" }))
      assert.strictEqual(error.reason, "exchange_failed")
    })
  )

  it.effect("an expired code is refused", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(Date.parse("2026-01-01T00:00:00Z"))
      const { idp } = yield* setup({ codeTtl: "60 seconds" })
      const grant = yield* authorize(idp)
      yield* TestClock.adjust("61 seconds")
      const error = yield* Effect.flip(idp.exchange({ ...grant, redirectUri }))
      assert.strictEqual(error.reason, "exchange_failed")
      assert.include(error.message, "expired")
    })
  )

  it.effect("a denied sign-in comes back with error=access_denied and the state", () =>
    Effect.gen(function* () {
      const { fake, idp } = yield* setup()
      yield* fake.denyNext
      const url = yield* idp.authorizeUrl({ state: "st-denied", codeChallenge: pkce().codeChallenge, redirectUri })
      const { location, query } = yield* signInAt(url)
      assert.strictEqual(`${location.origin}${location.pathname}`, redirectUri)
      assert.strictEqual(query.error, "access_denied")
      assert.strictEqual(query.state, "st-denied")
      assert.isUndefined(query.code)
      assert.strictEqual((yield* fake.stats).codesIssued, 0)
    })
  )

  it.effect("client_secret_basic sends form-encoded credentials in the Authorization header", () =>
    Effect.gen(function* () {
      const { fake, idp } = yield* setup(
        { clientId: "client id/1", clientSecret: "s3cret:+ &" },
        { clientId: "client id/1", clientSecret: "s3cret:+ &", clientAuth: "client_secret_basic" }
      )
      const grant = yield* authorize(idp)
      assert.strictEqual((yield* idp.exchange({ ...grant, redirectUri })).subject, "user-1")
      const token = (yield* fake.requests).find((r) => r.endpoint === "token")
      assert.strictEqual(token?.auth, "basic")
      assert.isUndefined(token?.params.client_secret)
    })
  )

  it.effect("a public client exchanges with PKCE alone", () =>
    Effect.gen(function* () {
      const { fake, idp } = yield* setup({ clientSecret: null })
      const grant = yield* authorize(idp)
      assert.strictEqual((yield* idp.exchange({ ...grant, redirectUri })).subject, "user-1")
      assert.strictEqual((yield* fake.requests).find((r) => r.endpoint === "token")?.auth, "none")
    })
  )

  it.effect("rejected client credentials are not_configured", () =>
    Effect.gen(function* () {
      const { idp } = yield* setup({}, { clientSecret: "wrong" })
      const grant = yield* authorize(idp)
      const error = yield* Effect.flip(idp.exchange({ ...grant, redirectUri }))
      assert.strictEqual(error.reason, "not_configured")
      assert.include(error.message, "invalid_client")
      assert.notInclude(error.message, "wrong")
    })
  )

  it.effect("GitHub-like userinfo: numeric id is the subject, login stands in for a missing name", () =>
    Effect.gen(function* () {
      const { idp } = yield* setup({
        userinfoStyle: "github",
        user: { subject: "583231", login: "octocat", name: null, email: null }
      })
      const grant = yield* authorize(idp)
      assert.deepStrictEqual(yield* idp.exchange({ ...grant, redirectUri }), {
        provider: "fake",
        subject: "583231",
        email: null,
        name: "octocat"
      })
    })
  )

  it.effect("an email the provider marks unverified is not kept", () =>
    Effect.gen(function* () {
      const { idp } = yield* setup({ user: { subject: "u", email: "u@example.test", emailVerified: false } })
      const grant = yield* authorize(idp)
      assert.isNull((yield* idp.exchange({ ...grant, redirectUri })).email)
    })
  )

  describe("failure mapping", () => {
    it.effect("userinfo 401 is userinfo_failed", () =>
      Effect.gen(function* () {
        const { fake, idp } = yield* setup()
        yield* fake.answerNext("userinfo", { status: 401, body: { error: "invalid_token" } })
        const grant = yield* authorize(idp)
        const error = yield* Effect.flip(idp.exchange({ ...grant, redirectUri }))
        assert.strictEqual(error.reason, "userinfo_failed")
        assert.include(error.message, "401")
      })
    )

    it.effect("a userinfo answer without a subject is userinfo_failed", () =>
      Effect.gen(function* () {
        const { fake, idp } = yield* setup()
        yield* fake.answerNext("userinfo", { status: 200, body: { email: "x@example.test" } })
        const grant = yield* authorize(idp)
        assert.strictEqual((yield* Effect.flip(idp.exchange({ ...grant, redirectUri }))).reason, "userinfo_failed")
      })
    )

    it.effect("a userinfo answer that is not an object is userinfo_failed", () =>
      Effect.gen(function* () {
        const { fake, idp } = yield* setup()
        yield* fake.answerNext("userinfo", { status: 200, body: ["not", "a", "user"] })
        const grant = yield* authorize(idp)
        assert.strictEqual((yield* Effect.flip(idp.exchange({ ...grant, redirectUri }))).reason, "userinfo_failed")
      })
    )

    it.live("a userinfo 503 that persists is unavailable, after retrying", () =>
      Effect.gen(function* () {
        const { fake, idp } = yield* setup()
        yield* fake.answerNext("userinfo", { status: 503 }, 3)
        const grant = yield* authorize(idp)
        const error = yield* Effect.flip(idp.exchange({ ...grant, redirectUri }))
        assert.strictEqual(error.reason, "unavailable")
        assert.strictEqual((yield* fake.stats).userinfo, 3)
      })
    )

    it.live("a single userinfo 503 is retried", () =>
      Effect.gen(function* () {
        const { fake, idp } = yield* setup()
        yield* fake.answerNext("userinfo", { status: 503 })
        const grant = yield* authorize(idp)
        assert.strictEqual((yield* idp.exchange({ ...grant, redirectUri })).subject, "user-1")
      })
    )

    it.live("a userinfo endpoint that does not answer times out as unavailable", () =>
      Effect.gen(function* () {
        const { fake, idp } = yield* setup({}, { timeout: "300 millis" })
        yield* fake.answerNext("userinfo", "stall")
        const grant = yield* authorize(idp)
        const error = yield* Effect.flip(idp.exchange({ ...grant, redirectUri }))
        assert.strictEqual(error.reason, "unavailable")
        assert.include(error.message, "did not answer")
      })
    )

    it.live("a token endpoint that does not answer times out as unavailable", () =>
      Effect.gen(function* () {
        const { fake, idp } = yield* setup({}, { timeout: "300 millis" })
        yield* fake.answerNext("token", "stall")
        const grant = yield* authorize(idp)
        assert.strictEqual((yield* Effect.flip(idp.exchange({ ...grant, redirectUri }))).reason, "unavailable")
      })
    )

    it.effect("a token endpoint 500 is unavailable and is not retried", () =>
      Effect.gen(function* () {
        const { fake, idp } = yield* setup()
        yield* fake.answerNext("token", { status: 500, body: { error: "server_error" } })
        const grant = yield* authorize(idp)
        assert.strictEqual((yield* Effect.flip(idp.exchange({ ...grant, redirectUri }))).reason, "unavailable")
        assert.strictEqual((yield* fake.stats).token, 1)
      })
    )

    it.effect("a 200 token answer carrying an OAuth error is exchange_failed (GitHub's style)", () =>
      Effect.gen(function* () {
        const { fake, idp } = yield* setup()
        yield* fake.answerNext("token", { status: 200, body: { error: "bad_verification_code" } })
        const grant = yield* authorize(idp)
        const error = yield* Effect.flip(idp.exchange({ ...grant, redirectUri }))
        assert.strictEqual(error.reason, "exchange_failed")
        assert.include(error.message, "bad_verification_code")
      })
    )

    it.effect("a token answer with another token type is exchange_failed", () =>
      Effect.gen(function* () {
        const { fake, idp } = yield* setup()
        yield* fake.answerNext("token", { status: 200, body: { access_token: "t", token_type: "mac" } })
        const grant = yield* authorize(idp)
        assert.strictEqual((yield* Effect.flip(idp.exchange({ ...grant, redirectUri }))).reason, "exchange_failed")
      })
    )

    it.effect("an unreachable provider is unavailable", () =>
      Effect.gen(function* () {
        const idp = yield* IdentityProviderOAuth.make({
          authorizeUrl: "http://127.0.0.1:9/authorize",
          tokenUrl: "http://127.0.0.1:9/token",
          userinfoUrl: "http://127.0.0.1:9/userinfo",
          clientId: "c"
        }).pipe(Effect.orDie, Effect.provide(FetchHttpClient.layer))
        const error = yield* Effect.flip(idp.exchange({ code: "c", codeVerifier: pkce().codeVerifier, redirectUri }))
        assert.strictEqual(error.reason, "unavailable")
      })
    )
  })

  describe("configuration", () => {
    const probe = Effect.service(Identity.IdentityProvider)

    it.effect("layerConfig provides the provider from the SERVICE_IDP_* settings", () =>
      Effect.gen(function* () {
        const fake = yield* FakeIdentityProvider.make()
        const idp = yield* probe.pipe(
          Effect.provide(IdentityProviderOAuth.layerConfig),
          Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(fake.env)))
        )
        assert.isTrue(idp.enabled)
        assert.strictEqual(idp.id, "fake")
        const grant = yield* authorize(idp)
        assert.strictEqual((yield* idp.exchange({ ...grant, redirectUri })).subject, "user-1")
      })
    )

    it.effect("without settings layerConfig provides the off provider: the server runs, sign-in is not offered", () =>
      Effect.gen(function* () {
        const idp = yield* probe.pipe(
          Effect.provide(IdentityProviderOAuth.layerConfig),
          Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ SERVICE_IDP_SCOPE: "openid" })))
        )
        assert.isFalse(idp.enabled)
        const refused = yield* Effect.flip(idp.authorizeUrl({ state: "s", codeChallenge: "c", redirectUri }))
        assert.strictEqual(refused.reason, "not_configured")
      })
    )

    it.effect("the provider name defaults to idp and the scope to openid email profile", () =>
      Effect.gen(function* () {
        const env = {
          SERVICE_IDP_AUTHORIZE_URL: "https://id.example.test/authorize",
          SERVICE_IDP_TOKEN_URL: "https://id.example.test/token",
          SERVICE_IDP_USERINFO_URL: "https://id.example.test/userinfo",
          SERVICE_IDP_CLIENT_ID: "abc"
        }
        const options = yield* IdentityProviderOAuth.config.parse(ConfigProvider.fromEnvRecord(env))
        assert.isTrue(Option.isSome(options))
        const value = Option.getOrThrow(options)
        assert.strictEqual(value.id, "idp")
        assert.strictEqual(value.scope, "openid email profile")
        assert.isUndefined(value.clientSecret)
      })
    )

    it.effect("partial settings are a configuration error, not a silently missing provider", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(
          IdentityProviderOAuth.config.parse(
            ConfigProvider.fromEnvRecord({ SERVICE_IDP_AUTHORIZE_URL: "https://id.example.test/authorize" })
          )
        )
        assert.include(error.message, "SERVICE_IDP_TOKEN_URL")
        assert.include(error.message, "SERVICE_IDP_CLIENT_ID")
      })
    )

    it.effect("an endpoint that is not an http(s) URL is a configuration error", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(
          IdentityProviderOAuth.config.parse(
            ConfigProvider.fromEnvRecord({
              SERVICE_IDP_AUTHORIZE_URL: "https://id.example.test/authorize",
              SERVICE_IDP_TOKEN_URL: "ftp://id.example.test/token",
              SERVICE_IDP_USERINFO_URL: "https://id.example.test/userinfo",
              SERVICE_IDP_CLIENT_ID: "abc"
            })
          )
        )
        assert.include(error.message, "SERVICE_IDP_TOKEN_URL")
      })
    )

    it.effect("layer fails with not_configured on an invalid endpoint", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(
          Layer.build(
            IdentityProviderOAuth.layer({
              authorizeUrl: "not a url",
              tokenUrl: "https://id.example.test/token",
              userinfoUrl: "https://id.example.test/userinfo",
              clientId: "abc"
            })
          )
        )
        assert.strictEqual(error.reason, "not_configured")
      })
    )
  })
})
