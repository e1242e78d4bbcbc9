import { createHash, randomBytes } from "node:crypto"
import { FakeIdentityProvider } from "@hostplane/testkit"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"

const redirectUri = "http://127.0.0.1:9/callback"

const pkce = () => {
  const verifier = randomBytes(32).toString("base64url")
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") }
}

const get = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(() => fetch(url, { redirect: "manual", headers }))

const postForm = (url: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
  Effect.promise(() =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(form)
    })
  )

const json = (response: Response) => Effect.promise(() => response.json() as Promise<Record<string, unknown>>)

type Fake = FakeIdentityProvider["Service"]

const authorizeQuery = (fake: Fake, overrides: Record<string, string> = {}) => {
  const { verifier, challenge } = pkce()
  const url = new URL(fake.authorizeUrl)
  const params = {
    response_type: "code",
    client_id: fake.clientId,
    redirect_uri: redirectUri,
    state: "st",
    code_challenge: challenge,
    code_challenge_method: "S256",
    ...overrides
  }
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value)
  return { url: url.toString(), verifier }
}

const redirectQuery = (response: Response) => {
  assert.strictEqual(response.status, 302)
  return Object.fromEntries(new URL(response.headers.get("location") ?? "").searchParams)
}

const codeFor = Effect.fnUntraced(function* (fake: Fake, overrides: Record<string, string> = {}) {
  const { url, verifier } = authorizeQuery(fake, overrides)
  const query = redirectQuery(yield* get(url))
  return { code: query.code ?? "", verifier }
})

const redeem = (fake: Fake, code: string, verifier: string) =>
  postForm(fake.tokenUrl, {
    grant_type: "authorization_code",
    code,
    redirect_uri: redirectUri,
    code_verifier: verifier,
    client_id: fake.clientId,
    client_secret: fake.clientSecret ?? ""
  })

describe("FakeIdentityProvider", () => {
  it.effect("authorize refuses an unknown client_id without redirecting", () =>
    Effect.gen(function* () {
      const fake = yield* FakeIdentityProvider.make()
      const response = yield* get(authorizeQuery(fake, { client_id: "someone-else" }).url)
      assert.strictEqual(response.status, 400)
      assert.isNull(response.headers.get("location"))
    })
  )

  it.effect("authorize refuses a redirect_uri that is not registered", () =>
    Effect.gen(function* () {
      const fake = yield* FakeIdentityProvider.make({ redirectUris: ["https://app.example.test/cb"] })
      assert.strictEqual((yield* get(authorizeQuery(fake).url)).status, 400)
      const ok = yield* get(authorizeQuery(fake, { redirect_uri: "https://app.example.test/cb" }).url)
      assert.isString(redirectQuery(ok).code)
    })
  )

  it.effect("authorize requires response_type=code and code_challenge_method=S256", () =>
    Effect.gen(function* () {
      const fake = yield* FakeIdentityProvider.make()
      const plain = redirectQuery(yield* get(authorizeQuery(fake, { code_challenge_method: "plain" }).url))
      assert.deepStrictEqual([plain.error, plain.state], ["invalid_request", "st"])
      const implicit = redirectQuery(yield* get(authorizeQuery(fake, { response_type: "token" }).url))
      assert.strictEqual(implicit.error, "unsupported_response_type")
    })
  )

  it.effect("login_hint picks a user the test signed in before", () =>
    Effect.gen(function* () {
      const fake = yield* FakeIdentityProvider.make()
      yield* fake.signIn({ subject: "ada", login: "ada-l", name: "Ada" })
      yield* fake.signIn({ subject: "bob" })
      const { code, verifier } = yield* codeFor(fake, { login_hint: "ada-l" })
      const token = yield* json(yield* redeem(fake, code, verifier))
      const info = yield* json(yield* get(fake.userinfoUrl, { authorization: `Bearer ${String(token.access_token)}` }))
      assert.strictEqual(info.sub, "ada")
    })
  )

  it.effect("the token endpoint checks the verifier against the challenge", () =>
    Effect.gen(function* () {
      const fake = yield* FakeIdentityProvider.make()
      const { code } = yield* codeFor(fake)
      const refused = yield* redeem(fake, code, pkce().verifier)
      assert.strictEqual(refused.status, 400)
      assert.strictEqual((yield* json(refused)).error, "invalid_grant")
    })
  )

  it.effect("the token endpoint takes only a form body", () =>
    Effect.gen(function* () {
      const fake = yield* FakeIdentityProvider.make()
      const response = yield* Effect.promise(() =>
        fetch(fake.tokenUrl, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ grant_type: "authorization_code" })
        })
      )
      assert.strictEqual(response.status, 400)
      assert.strictEqual((yield* json(response)).error, "invalid_request")
    })
  )

  it.effect("a wrong client secret is 401 invalid_client", () =>
    Effect.gen(function* () {
      const fake = yield* FakeIdentityProvider.make()
      const { code, verifier } = yield* codeFor(fake)
      const response = yield* postForm(fake.tokenUrl, {
        grant_type: "authorization_code",
        code,
        redirect_uri: redirectUri,
        code_verifier: verifier,
        client_id: fake.clientId,
        client_secret: "nope"
      })
      assert.strictEqual(response.status, 401)
      assert.strictEqual((yield* json(response)).error, "invalid_client")
    })
  )

  it.effect("a reused code is refused and revokes the token it bought", () =>
    Effect.gen(function* () {
      const fake = yield* FakeIdentityProvider.make()
      const { code, verifier } = yield* codeFor(fake)
      const first = yield* json(yield* redeem(fake, code, verifier))
      assert.strictEqual(first.token_type, "Bearer")
      const bearer = { authorization: `Bearer ${String(first.access_token)}` }
      assert.strictEqual((yield* get(fake.userinfoUrl, bearer)).status, 200)
      const again = yield* redeem(fake, code, verifier)
      assert.strictEqual(again.status, 400)
      assert.strictEqual((yield* json(again)).error, "invalid_grant")
      assert.strictEqual((yield* get(fake.userinfoUrl, bearer)).status, 401)
    })
  )

  it.effect("userinfo needs a bearer token it issued", () =>
    Effect.gen(function* () {
      const fake = yield* FakeIdentityProvider.make()
      assert.strictEqual((yield* get(fake.userinfoUrl)).status, 401)
      assert.strictEqual((yield* get(fake.userinfoUrl, { authorization: "Bearer made-up" })).status, 401)
      const stats = yield* fake.stats
      assert.strictEqual(stats.userinfo, 2)
    })
  )

  it.effect("the server closes when its scope ends", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const fake = yield* FakeIdentityProvider.make().pipe(Scope.provide(scope))
      assert.strictEqual((yield* get(fake.userinfoUrl)).status, 401)
      yield* Scope.close(scope, Exit.void)
      const after = yield* Effect.tryPromise(() => fetch(fake.userinfoUrl)).pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(after))
    })
  )
})
