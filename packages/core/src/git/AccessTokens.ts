import { Clock, Context, Duration, Effect, Layer, Option } from "effect"
import { BadRequest, NotFound, Unauthorized } from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { type AccessTokenId, makeId, newId } from "../kernel/Ids.ts"
import { isoToMillis, nowIso, rfc3339Millis } from "../kernel/Time.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { UserStore } from "../identity/UserStore.ts"
import { AuthCache, AuthChange } from "../identity/AuthCache.ts"
import {
  type AccessToken,
  type AccessTokenCreated,
  accessTokenPrefix,
  type AccessTokenRow,
  type CreateAccessTokenInput
} from "./Credentials.ts"
import { CredentialStore } from "./CredentialStore.ts"

/** `lastUsedAt` is written at most this often per token. */
export const lastUsedResolution = Duration.minutes(1)

const toAccessToken = (row: AccessTokenRow): AccessToken => ({
  id: row.id,
  name: row.name,
  createdAt: row.createdAt,
  expiresAt: row.expiresAt,
  lastUsedAt: row.lastUsedAt,
  revokedAt: row.revokedAt
})

/**
 * Personal access tokens (spec 4.12): `svc_pat_` and 32 random bytes, shown once, stored as SHA-256 only. A token is
 * a git password and an API bearer token with its user's roles; revoked and expired tokens are refused at once.
 */
export class AccessTokens extends Context.Service<
  AccessTokens,
  {
    readonly list: (actor: Actor) => Effect.Effect<ReadonlyArray<AccessToken>>
    readonly create: (actor: Actor, input: CreateAccessTokenInput) => Effect.Effect<AccessTokenCreated, BadRequest>
    /** Revoking a revoked token again is fine; an unknown one (or another user's) is 404. */
    readonly revoke: (actor: Actor, tokenId: string) => Effect.Effect<void, NotFound>
    /** The actor a token acts for: 401 when it is unknown, revoked or expired. */
    readonly authenticate: (token: string) => Effect.Effect<Actor, Unauthorized>
  }
>()("@hostplane/core/git/AccessTokens") {
  static readonly layer = Layer.effect(
    AccessTokens,
    Effect.gen(function* () {
      const store = yield* CredentialStore
      const users = yield* UserStore
      const tokens = yield* Tokens
      const cache = yield* AuthCache

      const list = Effect.fn("AccessTokens.list")(function* (actor: Actor) {
        return (yield* store.listTokens(actor.userId)).map(toAccessToken)
      })

      const create = Effect.fn("AccessTokens.create")(function* (actor: Actor, input: CreateAccessTokenInput) {
        const now = yield* nowIso
        const expiresAt = input.expiresAt ?? null
        const expiresMillis = expiresAt === null ? null : rfc3339Millis(expiresAt)
        if (expiresMillis === undefined) {
          return yield* new BadRequest({ message: "expiresAt must be an RFC 3339 time with its offset (or Z)" })
        }
        if (expiresMillis !== null && expiresMillis <= isoToMillis(now)) {
          return yield* new BadRequest({ message: "expiresAt must be in the future" })
        }
        const token = `${accessTokenPrefix}${yield* tokens.secret(32)}`
        const row: AccessTokenRow = {
          id: yield* newId(tokens, "pat"),
          userId: actor.userId,
          name: input.name,
          tokenHash: yield* tokens.hash(token),
          createdAt: now,
          expiresAt: expiresMillis === null ? null : new Date(expiresMillis).toISOString(),
          lastUsedAt: null,
          revokedAt: null
        }
        yield* store.insertToken(row)
        return { id: row.id, name: row.name, token, createdAt: row.createdAt, expiresAt: row.expiresAt }
      })

      const revoke = Effect.fn("AccessTokens.revoke")(function* (actor: Actor, tokenId: string) {
        if (!(yield* store.revokeToken(actor.userId, makeId("pat", tokenId) as AccessTokenId, yield* nowIso))) {
          return yield* new NotFound({ message: `token ${tokenId} not found` })
        }
        yield* cache.changed(AuthChange.user(actor.userId))
      })

      const refused = () => new Unauthorized({ message: "unknown, revoked or expired access token" })

      // Cold path: the token, its user, and `lastUsedAt` when stale; kept unless a change came meanwhile.
      const load = Effect.fnUntraced(function* (tokenHash: string, nowMillis: number) {
        const ticket = cache.ticket()
        const row = yield* store.findTokenByHash(tokenHash)
        const now = new Date(nowMillis).toISOString()
        if (Option.isNone(row) || row.value.revokedAt !== null) return yield* refused()
        if (row.value.expiresAt !== null && row.value.expiresAt <= now) return yield* refused()
        const user = yield* users.findById(row.value.userId)
        if (Option.isNone(user)) return yield* refused()
        const staleBefore = new Date(nowMillis - Duration.toMillis(lastUsedResolution)).toISOString()
        yield* store.touchToken(row.value.id, now, staleBefore)
        const { id, provider, subject, email, name } = user.value
        const actor: Actor = { userId: id, provider, subject, email, name }
        const expiresAt = row.value.expiresAt === null ? null : isoToMillis(row.value.expiresAt)
        cache.keepBearer(ticket, tokenHash, { actor, expiresAt }, nowMillis)
        return actor
      })

      // An API request with a token passes here: the cache answers while it holds the token (its TTL, seconds, is far
      // below `lastUsedResolution`, so `lastUsedAt` stays as fresh as before).
      const authenticate = (token: string): Effect.Effect<Actor, Unauthorized> =>
        token.startsWith(accessTokenPrefix)
          ? Effect.flatMap(tokens.hash(token), (tokenHash) =>
              Effect.flatMap(Clock.currentTimeMillis, (now) => {
                const hit = cache.bearer(tokenHash, now)
                return hit === undefined ? load(tokenHash, now) : Effect.succeed(hit.actor)
              })
            )
          : Effect.fail(refused())

      return AccessTokens.of({ list, create, revoke, authenticate })
    })
  )
}
