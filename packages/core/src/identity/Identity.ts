import { Clock, Context, Deferred, Duration, Effect, Layer, Option } from "effect"
import { BadRequest, Unauthorized } from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { HostnamesConfig } from "../hostnames/HostnamesConfig.ts"
import { Settings } from "../kernel/Settings.ts"
import { IdentityConfig } from "./IdentityConfig.ts"
import { isoAfter, nowIso } from "../kernel/Time.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { Transactor } from "../kernel/Transactor.ts"
import { toMembership } from "../orgs/Org.ts"
import { Orgs } from "../orgs/Orgs.ts"
import { OrgStore } from "../orgs/OrgStore.ts"
import { IdentityProvider } from "./IdentityProvider.ts"
import type { DevLoginInput, Me, Session, SiteConfig, User, VerifiedIdentity } from "./User.ts"
import { UserStore } from "./UserStore.ts"
import { AuthCache, AuthChange, cachedMemberships } from "./AuthCache.ts"
import type { MembershipRow } from "../orgs/OrgStore.ts"
import { newId } from "../kernel/Ids.ts"

/** How long a started OAuth sign-in may take before its `state` is void. */
export const oauthStateTtl = Duration.minutes(10)

/**
 * True when `redirect` starts with an allowlisted entry at a boundary, so `https://app.example` admits
 * `https://app.example/cb` but not `https://app.example.evil.test`.
 */
export const redirectAllowed = (redirect: string, allowlist: ReadonlyArray<string>): boolean =>
  isLoopbackRedirect(redirect) ||
  allowlist.some((entry) => {
    if (!redirect.startsWith(entry)) return false
    const next = redirect.charAt(entry.length)
    return next === "" || entry.endsWith("/") || next === "/" || next === "?" || next === "#"
  })

/**
 * RFC 8252 7.3: a native app (the `hostplane` CLI) listens on a loopback IP literal with a port chosen when it starts,
 * so `http://127.0.0.1:<any port>/...` and `http://[::1]:<any port>/...` are always allowed. The token can only reach a
 * process on the signing-in user's own machine; `localhost` is not (a name, which DNS or a hosts file may rebind).
 */
export const isLoopbackRedirect = (redirect: string): boolean => {
  const match = /^http:\/\/(127\.0\.0\.1|\[::1\]):([0-9]{1,5})\/[\x21-\x5b\x5d-\x7e]*$/.exec(redirect)
  if (match === null) return false
  const port = Number(match[2])
  return port >= 1 && port <= 65535
}

const fragment = (values: Record<string, string>): string =>
  Object.entries(values)
    .map(([key, value]) => `${key}=${encodeURIComponent(value)}`)
    .join("&")

/** Sign-in and sessions of spec 4.1. The first sign-in of a subject creates the user and a personal org. */
export class Identity extends Context.Service<
  Identity,
  {
    readonly config: Effect.Effect<SiteConfig>
    readonly devLogin: (input: DevLoginInput) => Effect.Effect<Session>
    /** The actor behind a bearer token; 401 when unknown or expired. */
    readonly authenticate: (token: string) => Effect.Effect<Actor, Unauthorized>
    /**
     * The actor of an identity the host verified itself (its own sign-in, decisions.md part 18): the same provider
     * and subject are the same user, created with a personal org on first sight, as an OAuth sign-in; no session.
     */
    readonly actorOf: (identity: VerifiedIdentity) => Effect.Effect<Actor>
    readonly me: (actor: Actor) => Effect.Effect<Me, Unauthorized>
    /**
     * `me` of a session token whose actor and memberships the auth cache holds, else undefined: never reads a store,
     * so the hot `GET /v1/me` can be answered before routing.
     */
    readonly cachedMe: (token: string) => Effect.Effect<Me | undefined>
    /**
     * The identity provider's authorize URL and its `state`; `redirect` must be on the allowlist. The caller hands
     * `state` to the browser (a cookie) so that `finishIdp` can tell the browser that started the sign-in.
     */
    readonly startIdp: (redirect: string) => Effect.Effect<{ readonly url: string; readonly state: string }, BadRequest>
    /** The client redirect with the session (or the error) in its fragment; 400 when `state` is unknown or used. */
    readonly finishIdp: (input: {
      readonly state: string
      readonly code?: string | undefined
      readonly error?: string | undefined
      /** The `state` the browser kept from `startIdp`; a missing or different one fails (login CSRF). */
      readonly browserState: string | undefined
    }) => Effect.Effect<string, BadRequest>
  }
>()("@hostplane/core/identity/Identity") {
  static readonly layer = Layer.effect(
    Identity,
    Effect.gen(function* () {
      const users = yield* UserStore
      const orgStore = yield* OrgStore
      const orgs = yield* Orgs
      const tokens = yield* Tokens
      const tx = yield* Transactor
      const settings = yield* Settings
      const identityConfig = yield* IdentityConfig
      const { dnsNameservers } = yield* HostnamesConfig
      const idp = yield* IdentityProvider
      const cache = yield* AuthCache

      const config = Effect.succeed<SiteConfig>({
        productName: settings.productName,
        publicUrl: settings.publicUrl,
        appDomain: settings.appDomain,
        nameservers: dnsNameservers,
        siteUrl: settings.siteUrl
      })

      // The user of a verified identity, created with a personal org on first sight; a changed profile is stored.
      const userOf = Effect.fn("Identity.userOf")(function* (identity: VerifiedIdentity) {
        const user = yield* tx.withTransaction(
          Effect.gen(function* () {
            const existing = yield* users.findByIdentity(identity.provider, identity.subject)
            if (Option.isSome(existing)) {
              const profile = {
                email: identity.email ?? existing.value.email,
                name: identity.name ?? existing.value.name
              }
              if (profile.email !== existing.value.email || profile.name !== existing.value.name) {
                yield* users.updateProfile(existing.value.id, profile)
              }
              return { ...existing.value, ...profile }
            }
            const fresh: User = { id: yield* newId(tokens, "usr"), ...identity }
            const inserted = yield* users.insert(fresh, yield* nowIso)
            if (inserted.created) {
              yield* orgs.createPersonal(fresh.id, identity.name ?? identity.subject)
            }
            return inserted.user
          })
        )
        // A profile or a personal org may have changed: this process forgets the user before answering.
        yield* cache.changed(AuthChange.user(user.id))
        return user
      })

      const signIn = Effect.fn("Identity.signIn")(function* (identity: VerifiedIdentity) {
        const user = yield* userOf(identity)
        const token = yield* tokens.secret(32)
        const expiresAt = yield* isoAfter(identityConfig.sessionTtl)
        yield* users.insertSession({
          tokenHash: yield* tokens.hash(token),
          userId: user.id,
          expiresAt,
          createdAt: yield* nowIso
        })
        return { token, expiresAt, userId: user.id, subject: user.subject }
      })

      // A host's own sign-in maps to the same user on every request: held in the cache beside the bearer tokens (a
      // key no token hash can take), forgotten with the user's other entries; the profile is written (and the cache
      // told) only when it changed, so a steady caller reads no store.
      const actorOf = Effect.fnUntraced(function* (identity: VerifiedIdentity) {
        const key = `identity\u0000${identity.provider}\u0000${identity.subject}`
        const now = yield* Clock.currentTimeMillis
        const unchanged = (held: { readonly email: string | null; readonly name: string | null }) =>
          (identity.email ?? held.email) === held.email && (identity.name ?? held.name) === held.name
        const hit = cache.bearer(key, now)
        if (hit !== undefined && unchanged(hit.actor)) return hit.actor
        const ticket = cache.ticket()
        const existing = yield* users.findByIdentity(identity.provider, identity.subject)
        const user = Option.isSome(existing) && unchanged(existing.value) ? existing.value : yield* userOf(identity)
        const actor: Actor = {
          userId: user.id,
          provider: user.provider,
          subject: user.subject,
          email: user.email,
          name: user.name
        }
        cache.keepBearer(ticket, key, { actor, expiresAt: null }, now)
        return actor
      })

      const devLogin = (input: DevLoginInput) =>
        signIn({ provider: "dev", subject: input.subject, email: input.email ?? null, name: input.name ?? null })

      const unauthorized = () => new Unauthorized({ message: "sign in first" })

      // Cold path: one read of the session, its user and their memberships, kept unless a change came meanwhile.
      const loadSession = Effect.fnUntraced(function* (tokenHash: string, now: number) {
        const ticket = cache.ticket()
        const found = yield* users.findPrincipal(tokenHash, new Date(now).toISOString())
        if (Option.isNone(found)) return yield* unauthorized()
        const { user, expiresAt, memberships } = found.value
        const actor: Actor = {
          userId: user.id,
          provider: user.provider,
          subject: user.subject,
          email: user.email,
          name: user.name
        }
        cache.keepBearer(ticket, tokenHash, { actor, expiresAt: Date.parse(expiresAt) }, now)
        cache.keepMemberships(ticket, user.id, memberships, now)
        return actor
      })

      // A busy client's connections all miss together when its entry ends (or before it is first kept): concurrent
      // cold requests of one token share one load instead of each making the same read. A request joins a load only
      // while no change has been heard since it started, so nothing read before a revocation is handed on after it.
      const loading = new Map<
        string,
        { readonly ticket: number; readonly actor: Deferred.Deferred<Actor, Unauthorized> }
      >()
      const loadOnce = (tokenHash: string, now: number): Effect.Effect<Actor, Unauthorized> =>
        Effect.suspend(() => {
          const ticket = cache.ticket()
          const pending = loading.get(tokenHash)
          if (pending !== undefined && pending.ticket === ticket) return Deferred.await(pending.actor)
          const shared = { ticket, actor: Deferred.makeUnsafe<Actor, Unauthorized>() }
          loading.set(tokenHash, shared)
          // Uninterruptible: the requests waiting on it get an answer even when the first one's client leaves.
          return Effect.uninterruptible(
            Effect.flatten(
              Effect.tap(Effect.exit(loadSession(tokenHash, now)), (exit) =>
                Effect.sync(() => {
                  if (loading.get(tokenHash) === shared) loading.delete(tokenHash)
                  Deferred.doneUnsafe(shared.actor, exit)
                })
              )
            )
          )
        })

      // Every authenticated request passes here: no span, and no store read while the cache holds the token.
      const authenticate = (token: string): Effect.Effect<Actor, Unauthorized> =>
        Effect.flatMap(tokens.hash(token), (tokenHash) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => {
            const hit = cache.bearer(tokenHash, now)
            return hit === undefined ? loadOnce(tokenHash, now) : Effect.succeed(hit.actor)
          })
        )

      const toMe = (actor: Actor, memberships: ReadonlyArray<MembershipRow>): Me => ({
        user: {
          id: actor.userId,
          provider: actor.provider,
          subject: actor.subject,
          email: actor.email,
          name: actor.name
        },
        orgs: memberships.map((m) => toMembership(m.org, m.role, settings.planLimits))
      })

      const me = (actor: Actor): Effect.Effect<Me> =>
        Effect.map(cachedMemberships(cache, actor.userId, orgStore.membershipsOf(actor.userId)), (rows) =>
          toMe(actor, rows)
        )

      const cachedMe = (token: string): Effect.Effect<Me | undefined> =>
        Effect.flatMap(tokens.hash(token), (tokenHash) =>
          Effect.map(Clock.currentTimeMillis, (now) => {
            const bearer = cache.bearer(tokenHash, now)
            if (bearer === undefined) return undefined
            const memberships = cache.memberships(bearer.actor.userId, now)
            return memberships === undefined ? undefined : toMe(bearer.actor, memberships)
          })
        )

      const callbackUri = `${settings.publicUrl}/v1/auth/idp/callback`

      const startIdp = Effect.fn("Identity.startIdp")(function* (redirect: string) {
        if (!redirectAllowed(redirect, identityConfig.oauthRedirects)) {
          return yield* new BadRequest({ message: "redirect is not on the allowlist (SERVICE_OAUTH_REDIRECTS)" })
        }
        if (!idp.enabled) {
          return yield* new BadRequest({ message: "no identity provider is configured" })
        }
        const state = yield* tokens.secret(32)
        const codeVerifier = yield* tokens.secret(32)
        const codeChallenge = yield* pkceChallenge(codeVerifier)
        yield* users.insertOAuthState({
          stateHash: yield* tokens.hash(state),
          redirect,
          codeVerifier,
          expiresAt: yield* isoAfter(oauthStateTtl)
        })
        const url = yield* idp
          .authorizeUrl({ state, codeChallenge, redirectUri: callbackUri })
          .pipe(Effect.mapError((error) => new BadRequest({ message: error.message })))
        return { url, state }
      })

      const finishIdp = Effect.fn("Identity.finishIdp")(function* (input: {
        readonly state: string
        readonly code?: string | undefined
        readonly error?: string | undefined
        readonly browserState: string | undefined
      }) {
        const stateHash = yield* tokens.hash(input.state)
        const pending = yield* users.takeOAuthState(stateHash)
        if (Option.isNone(pending) || pending.value.expiresAt <= (yield* nowIso)) {
          return yield* new BadRequest({ message: "unknown, used or expired sign-in state" })
        }
        const back = (values: Record<string, string>) => `${pending.value.redirect.split("#")[0]}#${fragment(values)}`
        // Someone else's state and code, planted in this browser, would sign it in as them: the state is used up.
        const fromThisBrowser =
          input.browserState !== undefined && (yield* tokens.hash(input.browserState)) === stateHash
        if (!fromThisBrowser) {
          return back({ error: "state_mismatch", message: "this sign-in was started in another browser: start again" })
        }
        if (input.error !== undefined && input.error !== "") {
          return back({ error: input.error, message: "the identity provider refused the sign-in" })
        }
        if (input.code === undefined || input.code === "") {
          return back({ error: "invalid_request", message: "the identity provider sent no code" })
        }
        const identity = yield* idp
          .exchange({ code: input.code, codeVerifier: pending.value.codeVerifier, redirectUri: callbackUri })
          .pipe(Effect.option)
        if (Option.isNone(identity)) {
          return back({ error: "exchange_failed", message: "the sign-in code could not be exchanged" })
        }
        const session = yield* signIn(identity.value)
        return back({ ...session })
      })

      return Identity.of({ config, devLogin, authenticate, actorOf, me, cachedMe, startIdp, finishIdp })
    })
  )
}

/** RFC 7636 S256: base64url(SHA-256(verifier)). */
export const pkceChallenge = (verifier: string): Effect.Effect<string> =>
  Effect.promise(() => globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))).pipe(
    Effect.map((digest) =>
      btoa(String.fromCharCode(...new Uint8Array(digest)))
        .replace(/\+/g, "-")
        .replace(/\//g, "_")
        .replace(/=+$/, "")
    )
  )
