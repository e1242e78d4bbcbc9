import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Clock, Context, Duration, Effect, Layer } from "effect"

/** A user the fake provider signs in; `login` is GitHub's handle. */
export interface FakeIdpUser {
  readonly subject: string
  readonly email?: string | null | undefined
  readonly name?: string | null | undefined
  readonly login?: string | undefined
  /** OIDC `email_verified`; left out of the userinfo answer when undefined. */
  readonly emailVerified?: boolean | undefined
}

export type FakeIdpEndpoint = "authorize" | "token" | "userinfo"

/** One request the fake answered, with its query (authorize, userinfo) or form (token) parameters. */
export interface FakeIdpRequest {
  readonly endpoint: FakeIdpEndpoint
  readonly method: string
  readonly params: Readonly<Record<string, string>>
  /** How the client authenticated: the `Authorization` scheme, else `post` when the form carries `client_secret`. */
  readonly auth: "basic" | "bearer" | "post" | "none"
  /** 0 for a request the fake was told to stall. */
  readonly status: number
  /** The OAuth `error` the fake answered with, if any. */
  readonly error: string | null
}

export interface FakeIdpStats {
  readonly authorize: number
  readonly token: number
  readonly userinfo: number
  readonly codesIssued: number
  readonly codesRedeemed: number
  readonly tokensIssued: number
}

export interface FakeIdpOptions {
  /** Default `"hostplane-test-client"`. */
  readonly clientId?: string | undefined
  /** Default `"hostplane-test-secret"`; `null` registers a public client (PKCE only). */
  readonly clientSecret?: string | null | undefined
  /** Exact redirect URIs registered for the client; when absent any http(s) URI is accepted. */
  readonly redirectUris?: ReadonlyArray<string> | undefined
  /** How long an authorization code may wait for its exchange; default 60 seconds, measured on the `Clock`. */
  readonly codeTtl?: Duration.Input | undefined
  /** `oidc` answers `{ sub, email, name }`; `github` answers GitHub's `/user`: `{ id, login, name, email }`. */
  readonly userinfoStyle?: "oidc" | "github" | undefined
  /** The user signed in at the start; default `{ subject: "user-1", email: "user-1@example.test", name: "User One" }`. */
  readonly user?: FakeIdpUser | undefined
}

/** A canned answer for the next call to an endpoint, or `"stall"` to never answer it (until the scope ends). */
export type FakeIdpAnswer = { readonly status: number; readonly body?: unknown } | "stall"

interface CodeGrant {
  readonly clientId: string
  readonly redirectUri: string
  readonly challenge: string
  readonly user: FakeIdpUser
  readonly expiresAt: number
  used: boolean
  accessToken: string | null
}

/**
 * An OAuth 2.0 authorization server (code flow with PKCE S256) on a loopback port, strict like a real one: codes are
 * single use, short lived, bound to the client, redirect URI and challenge; a reused code revokes its token.
 */
export class FakeIdentityProvider extends Context.Service<
  FakeIdentityProvider,
  {
    readonly baseUrl: string
    readonly authorizeUrl: string
    readonly tokenUrl: string
    readonly userinfoUrl: string
    readonly clientId: string
    readonly clientSecret: string | null
    /** The `SERVICE_IDP_*` settings that point a hostplane server at this provider. */
    readonly env: Readonly<Record<string, string>>
    /** The user the authorize page signs in from now on (a `login_hint` naming a known subject or login wins). */
    readonly signIn: (user: FakeIdpUser) => Effect.Effect<void>
    /** The next authorize request is refused by the "user": a redirect with `error=access_denied`. */
    readonly denyNext: Effect.Effect<void>
    /** Replaces the next `times` (default 1) answers of the token or userinfo endpoint. */
    readonly answerNext: (endpoint: "token" | "userinfo", answer: FakeIdpAnswer, times?: number) => Effect.Effect<void>
    readonly requests: Effect.Effect<ReadonlyArray<FakeIdpRequest>>
    readonly stats: Effect.Effect<FakeIdpStats>
  }
>()("@hostplane/testkit/identity/FakeIdentityProvider") {
  /** Starts the provider on 127.0.0.1 with an ephemeral port; it closes when the scope ends. */
  static readonly make = (options: FakeIdpOptions = {}) => make(options)
  static readonly layer = (options: FakeIdpOptions = {}) => Layer.effect(FakeIdentityProvider, make(options))
}

const defaultUser: FakeIdpUser = { subject: "user-1", email: "user-1@example.test", name: "User One" }

const base64url = /^[A-Za-z0-9_-]+$/
const verifierFormat = /^[A-Za-z0-9._~-]{43,128}$/

const s256 = (verifier: string) => createHash("sha256").update(verifier).digest("base64url")

const sameText = (a: string, b: string) => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  const text = JSON.stringify(body)
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
    ...headers
  })
  res.end(text)
}

const readBody = (req: IncomingMessage, limit = 64 * 1024): Promise<string | null> =>
  new Promise((resolve) => {
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        resolve(null)
        req.destroy()
      } else chunks.push(chunk)
    })
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", () => resolve(null))
  })

const make = Effect.fnUntraced(function* (options: FakeIdpOptions) {
  const clock = yield* Clock.clockWith(Effect.succeed)
  const clientId = options.clientId ?? "hostplane-test-client"
  const clientSecret = options.clientSecret === undefined ? "hostplane-test-secret" : options.clientSecret
  const codeTtl = Duration.toMillis(options.codeTtl ?? Duration.seconds(60))
  const style = options.userinfoStyle ?? "oidc"

  let current: FakeIdpUser = options.user ?? defaultUser
  const known = new Map<string, FakeIdpUser>([[current.subject, current]])
  let denyNext = false
  const canned = { token: [] as Array<FakeIdpAnswer>, userinfo: [] as Array<FakeIdpAnswer> }
  const codes = new Map<string, CodeGrant>()
  const tokens = new Map<string, FakeIdpUser>()
  const log: Array<FakeIdpRequest> = []
  const counts = { codesIssued: 0, codesRedeemed: 0, tokensIssued: 0 }

  const record = (entry: FakeIdpRequest) => {
    log.push(entry)
  }

  const redirectAllowed = (uri: string) => {
    if (options.redirectUris !== undefined) return options.redirectUris.includes(uri)
    return URL.canParse(uri) && ["http:", "https:"].includes(new URL(uri).protocol) && new URL(uri).hash === ""
  }

  const authorize = (req: IncomingMessage, res: ServerResponse, url: URL) => {
    const params = Object.fromEntries(url.searchParams)
    const done = (status: number, error: string | null) =>
      record({ endpoint: "authorize", method: req.method ?? "", params, auth: "none", status, error })
    if (req.method !== "GET") {
      res.writeHead(405, { allow: "GET" }).end()
      return done(405, null)
    }
    const redirectUri = params.redirect_uri ?? ""
    if (params.client_id !== clientId || !redirectAllowed(redirectUri)) {
      res.writeHead(400, { "content-type": "text/plain" }).end("unknown client_id or unregistered redirect_uri")
      return done(400, "invalid_request")
    }
    const back = (values: Record<string, string>) => {
      const target = new URL(redirectUri)
      for (const [key, value] of Object.entries(values)) target.searchParams.set(key, value)
      if (params.state !== undefined) target.searchParams.set("state", params.state)
      res.writeHead(302, { location: target.toString(), "cache-control": "no-store" }).end()
    }
    const refuse = (error: string, description: string) => {
      back({ error, error_description: description })
      done(302, error)
    }
    if (params.response_type !== "code") return refuse("unsupported_response_type", "response_type must be code")
    if (params.code_challenge_method !== "S256") return refuse("invalid_request", "code_challenge_method must be S256")
    const challenge = params.code_challenge ?? ""
    if (challenge.length !== 43 || !base64url.test(challenge)) {
      return refuse("invalid_request", "code_challenge must be a base64url SHA-256")
    }
    if (denyNext) {
      denyNext = false
      return refuse("access_denied", "the user refused the sign-in")
    }
    const hint = params.login_hint
    const user =
      (hint === undefined ? undefined : [...known.values()].find((u) => u.subject === hint || u.login === hint)) ??
      current
    const code = randomBytes(24).toString("base64url")
    codes.set(code, {
      clientId,
      redirectUri,
      challenge,
      user,
      expiresAt: clock.currentTimeMillisUnsafe() + codeTtl,
      used: false,
      accessToken: null
    })
    counts.codesIssued++
    back({ code })
    done(302, null)
  }

  const token = async (req: IncomingMessage, res: ServerResponse) => {
    const header = req.headers.authorization ?? ""
    const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase()
    const raw = req.method === "POST" ? await readBody(req) : null
    const params: Record<string, string> = Object.fromEntries(new URLSearchParams(raw ?? ""))
    const auth = header.toLowerCase().startsWith("basic ")
      ? "basic"
      : params.client_secret !== undefined
        ? "post"
        : "none"
    const answer = (status: number, body: Record<string, unknown>, headers: Record<string, string> = {}) => {
      sendJson(res, status, body, headers)
      const error = typeof body.error === "string" ? body.error : null
      record({ endpoint: "token", method: req.method ?? "", params: redactForm(params), auth, status, error })
    }
    const oauthError = (status: number, error: string, description: string) =>
      answer(status, { error, error_description: description }, status === 401 ? { "www-authenticate": "Basic" } : {})

    if (req.method !== "POST") return oauthError(405, "invalid_request", "use POST")
    if (type !== "application/x-www-form-urlencoded" || raw === null) {
      return oauthError(400, "invalid_request", "the body must be application/x-www-form-urlencoded")
    }
    const next = canned.token.shift()
    if (next !== undefined) {
      if (next !== "stall") sendJson(res, next.status, next.body ?? {})
      const status = next === "stall" ? 0 : next.status
      return record({ endpoint: "token", method: "POST", params: redactForm(params), auth, status, error: null })
    }
    if (params.grant_type !== "authorization_code") {
      return oauthError(400, "unsupported_grant_type", "grant_type must be authorization_code")
    }

    let presentedId: string | undefined = params.client_id
    let presentedSecret: string | undefined = params.client_secret
    if (auth === "basic") {
      const decoded = Buffer.from(header.slice(6).trim(), "base64").toString("utf8")
      const colon = decoded.indexOf(":")
      const formDecode = (value: string) => decodeURIComponent(value.replace(/\+/g, " "))
      presentedId = colon < 0 ? undefined : formDecode(decoded.slice(0, colon))
      presentedSecret = colon < 0 ? undefined : formDecode(decoded.slice(colon + 1))
      if (params.client_id !== undefined && params.client_id !== presentedId) {
        return oauthError(400, "invalid_request", "client_id differs from the Basic credentials")
      }
    }
    if (presentedId !== clientId) return oauthError(401, "invalid_client", "unknown client")
    if (clientSecret !== null && (presentedSecret === undefined || !sameText(presentedSecret, clientSecret))) {
      return oauthError(401, "invalid_client", "client authentication failed")
    }

    const code = params.code ?? ""
    const grant = codes.get(code)
    if (grant === undefined) return oauthError(400, "invalid_grant", "unknown code")
    if (grant.used) {
      if (grant.accessToken !== null) tokens.delete(grant.accessToken)
      grant.accessToken = null
      return oauthError(400, "invalid_grant", "code already used")
    }
    grant.used = true
    if (clock.currentTimeMillisUnsafe() >= grant.expiresAt) return oauthError(400, "invalid_grant", "code expired")
    if (grant.clientId !== presentedId) return oauthError(400, "invalid_grant", "code issued to another client")
    if (params.redirect_uri !== grant.redirectUri) {
      return oauthError(400, "invalid_grant", "redirect_uri differs from the authorize request")
    }
    const verifier = params.code_verifier ?? ""
    if (!verifierFormat.test(verifier)) return oauthError(400, "invalid_request", "code_verifier is malformed")
    if (!sameText(s256(verifier), grant.challenge)) return oauthError(400, "invalid_grant", "PKCE verification failed")

    const accessToken = randomBytes(32).toString("base64url")
    tokens.set(accessToken, grant.user)
    grant.accessToken = accessToken
    counts.codesRedeemed++
    counts.tokensIssued++
    answer(200, { access_token: accessToken, token_type: "Bearer", expires_in: 3600, scope: "openid email profile" })
  }

  const userinfo = (req: IncomingMessage, res: ServerResponse, url: URL) => {
    const header = req.headers.authorization ?? ""
    const bearer = header.toLowerCase().startsWith("bearer ")
    const note = (status: number, error: string | null) =>
      record({
        endpoint: "userinfo",
        method: req.method ?? "",
        params: Object.fromEntries(url.searchParams),
        auth: bearer ? "bearer" : header === "" ? "none" : "basic",
        status,
        error
      })
    const next = canned.userinfo.shift()
    if (next !== undefined) {
      if (next === "stall") return note(0, null)
      sendJson(res, next.status, next.body ?? {})
      return note(next.status, null)
    }
    if (req.method !== "GET") {
      res.writeHead(405, { allow: "GET" }).end()
      return note(405, null)
    }
    const user = bearer ? tokens.get(header.slice(7).trim()) : undefined
    if (user === undefined) {
      sendJson(res, 401, { error: "invalid_token" }, { "www-authenticate": 'Bearer error="invalid_token"' })
      return note(401, "invalid_token")
    }
    sendJson(res, 200, style === "github" ? githubUser(user) : oidcUser(user))
    note(200, null)
  }

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    switch (url.pathname) {
      case "/oauth/authorize":
        return authorize(req, res, url)
      case "/oauth/token":
        return void token(req, res).catch(() => {
          if (!res.headersSent) sendJson(res, 500, { error: "server_error" })
        })
      case "/userinfo":
        return userinfo(req, res, url)
      default:
        res.writeHead(404).end()
    }
  }

  const server = yield* Effect.acquireRelease(
    Effect.callback<Server>((resume) => {
      const server = createServer(handle)
      server.once("error", (error) => resume(Effect.die(error)))
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  )
  const { port } = server.address() as AddressInfo
  const baseUrl = `http://127.0.0.1:${port}`
  const authorizeUrl = `${baseUrl}/oauth/authorize`
  const tokenUrl = `${baseUrl}/oauth/token`
  const userinfoUrl = `${baseUrl}/userinfo`

  const env: Record<string, string> = {
    SERVICE_IDP_ID: "fake",
    SERVICE_IDP_AUTHORIZE_URL: authorizeUrl,
    SERVICE_IDP_TOKEN_URL: tokenUrl,
    SERVICE_IDP_USERINFO_URL: userinfoUrl,
    SERVICE_IDP_CLIENT_ID: clientId
  }
  if (clientSecret !== null) env.SERVICE_IDP_CLIENT_SECRET = clientSecret

  return FakeIdentityProvider.of({
    baseUrl,
    authorizeUrl,
    tokenUrl,
    userinfoUrl,
    clientId,
    clientSecret,
    env,
    signIn: (user) =>
      Effect.sync(() => {
        current = user
        known.set(user.subject, user)
      }),
    denyNext: Effect.sync(() => {
      denyNext = true
    }),
    answerNext: (endpoint, answer, times = 1) =>
      Effect.sync(() => {
        for (let i = 0; i < times; i++) canned[endpoint].push(answer)
      }),
    requests: Effect.sync(() => [...log]),
    stats: Effect.sync(() => ({
      authorize: log.filter((r) => r.endpoint === "authorize").length,
      token: log.filter((r) => r.endpoint === "token").length,
      userinfo: log.filter((r) => r.endpoint === "userinfo").length,
      ...counts
    }))
  })
})

const redactForm = (params: Record<string, string>): Record<string, string> =>
  params.client_secret === undefined ? params : { ...params, client_secret: "<redacted>" }

const oidcUser = (user: FakeIdpUser) => ({
  sub: user.subject,
  email: user.email ?? null,
  name: user.name ?? null,
  ...(user.login === undefined ? {} : { preferred_username: user.login }),
  ...(user.emailVerified === undefined ? {} : { email_verified: user.emailVerified })
})

const githubUser = (user: FakeIdpUser) => ({
  id: /^\d+$/.test(user.subject) ? Number(user.subject) : user.subject,
  login: user.login ?? user.subject,
  name: user.name ?? null,
  email: user.email ?? null
})
