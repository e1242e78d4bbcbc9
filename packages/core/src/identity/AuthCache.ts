import { Clock, Context, Duration, Effect, Layer } from "effect"
import type { Actor } from "../kernel/Actor.ts"
import type { MembershipRow } from "../orgs/OrgStore.ts"

/** A bearer token's actor as last read, and when the session or token ends (epoch ms; null: never). */
export interface CachedBearer {
  readonly actor: Actor
  readonly expiresAt: number | null
}

/**
 * What changed, as every replica hears it (`payload`): a user (profile, sessions, tokens, memberships), an org (name,
 * plan, deletion: the memberships that show it), or anything (a lost feed).
 */
export type AuthChange =
  | { readonly _tag: "User"; readonly userId: string }
  | { readonly _tag: "Org"; readonly orgId: string }
  | { readonly _tag: "All" }

export const AuthChange = {
  user: (userId: string): AuthChange => ({ _tag: "User", userId }),
  org: (orgId: string): AuthChange => ({ _tag: "Org", orgId }),
  all: { _tag: "All" } as AuthChange,
  /** `u:<user id>`, `o:<org id>` (what the PostgreSQL triggers send); anything else means everything. */
  parse: (payload: string): AuthChange =>
    payload.startsWith("u:")
      ? { _tag: "User", userId: payload.slice(2) }
      : payload.startsWith("o:")
        ? { _tag: "Org", orgId: payload.slice(2) }
        : { _tag: "All" }
}

export interface AuthCacheOptions {
  /** How long an entry is served without a change heard: the safety net under the change feed. */
  readonly ttl?: Duration.Input
  /** Entries per map; the oldest goes first. */
  readonly maxEntries?: number
  /** Serve nothing until `resume` (a store whose change feed is not listening yet). */
  readonly paused?: boolean
}

/** The cache's options where a host or a test builds the stores (a longer `ttl`, `ttl: 0` to turn it off). */
export const AuthCacheSettings = Context.Reference<AuthCacheOptions>("@hostplane/core/identity/AuthCacheSettings", {
  defaultValue: () => ({})
})

interface Entry<A> {
  readonly value: A
  readonly until: number
}

/**
 * The bearer lookups and memberships of recent actors, so a hot request reads no store. Plain functions,
 * not effects: they run on every authenticated request. Correctness rests on three rules: a writer calls `changed`
 * after its commit (its own process never serves what it replaced); every replica hears the store's change feed;
 * a load keeps its result only when no change concerning it arrived while it ran (`ticket`). Entries also end after `ttl`.
 * Not Effect's `Cache`, for that last rule, not for speed (`bench:auth-cache`: a hit costs the same, 0.98x, median
 * of 16 alternated runs): `Cache` invalidates by key, and a lookup still pending has no value a user's or an org's
 * change could be matched against, so a session revoked while its load ran would be served until the entry ends.
 */
export class AuthCache extends Context.Service<
  AuthCache,
  {
    /** The entry of a token hash unless stale or expired at `now` (epoch ms). */
    readonly bearer: (tokenHash: string, now: number) => CachedBearer | undefined
    readonly memberships: (userId: string, now: number) => ReadonlyArray<MembershipRow> | undefined
    /** Taken before a load; a `keep*` keeps nothing when a change heard since concerns what it read. */
    readonly ticket: () => number
    readonly keepBearer: (ticket: number, tokenHash: string, entry: CachedBearer, now: number) => void
    readonly keepMemberships: (ticket: number, userId: string, rows: ReadonlyArray<MembershipRow>, now: number) => void
    readonly invalidate: (change: AuthChange) => void
    /** `invalidate` as an effect, for writers once their transaction committed. */
    readonly changed: (change: AuthChange) => Effect.Effect<void>
    /** Stops serving and forgets everything (the change feed is lost). */
    readonly pause: () => void
    /** Serves again, from nothing (the change feed listens again). */
    readonly resume: () => void
  }
>()("@hostplane/core/identity/AuthCache") {
  static readonly make = (options: AuthCacheOptions = {}): AuthCache["Service"] => {
    const ttl = Duration.toMillis(Duration.fromInputUnsafe(options.ttl ?? defaultTtl))
    const maxEntries = options.maxEntries ?? 10_000
    const bearers = new Map<string, Entry<CachedBearer>>()
    const members = new Map<string, Entry<ReadonlyArray<MembershipRow>>>()
    let version = 0
    let live = options.paused !== true && ttl > 0
    // The latest changes, `recent[v % recentChanges]` being change number v: a load keeps its result unless a change
    // heard while it ran concerns it, so a busy cluster's stream of unrelated changes does not keep the cache cold.
    const recent: Array<AuthChange> = []
    const changedSince = (ticket: number, concerns: (change: AuthChange) => boolean) => {
      if (version - ticket > recentChanges) return true
      for (let v = ticket + 1; v <= version; v++) {
        const change = recent[v % recentChanges]!
        if (change._tag === "All" || concerns(change)) return true
      }
      return false
    }

    const fresh = <A>(map: Map<string, Entry<A>>, key: string, now: number): A | undefined => {
      const entry = map.get(key)
      if (entry === undefined) return undefined
      if (entry.until > now) return entry.value
      map.delete(key)
      return undefined
    }
    const keep = <A>(map: Map<string, Entry<A>>, key: string, value: A, until: number) => {
      map.delete(key)
      if (map.size >= maxEntries) map.delete(map.keys().next().value as string)
      map.set(key, { value, until })
    }

    const invalidate = (change: AuthChange) => {
      version++
      recent[version % recentChanges] = change
      switch (change._tag) {
        case "User": {
          members.delete(change.userId)
          for (const [key, entry] of bearers) if (entry.value.actor.userId === change.userId) bearers.delete(key)
          return
        }
        case "Org": {
          for (const [key, entry] of members)
            if (entry.value.some((m) => m.org.id === change.orgId)) members.delete(key)
          return
        }
        case "All": {
          bearers.clear()
          members.clear()
        }
      }
    }

    return AuthCache.of({
      bearer: (tokenHash, now) => {
        if (!live) return undefined
        const entry = fresh(bearers, tokenHash, now)
        if (entry === undefined) return undefined
        if (entry.expiresAt !== null && entry.expiresAt <= now) {
          bearers.delete(tokenHash)
          return undefined
        }
        return entry
      },
      memberships: (userId, now) => (live ? fresh(members, userId, now) : undefined),
      ticket: () => version,
      keepBearer: (ticket, tokenHash, entry, now) => {
        if (live && !changedSince(ticket, (change) => concernsUser(change, entry.actor.userId))) {
          keep(bearers, tokenHash, entry, now + ttl)
        }
      },
      keepMemberships: (ticket, userId, rows, now) => {
        const concerns = (change: AuthChange) =>
          concernsUser(change, userId) || (change._tag === "Org" && rows.some((m) => m.org.id === change.orgId))
        if (live && !changedSince(ticket, concerns)) keep(members, userId, rows, now + ttl)
      },
      invalidate,
      changed: (change) => Effect.sync(() => invalidate(change)),
      pause: () => {
        live = false
        invalidate(AuthChange.all)
      },
      resume: () => {
        invalidate(AuthChange.all)
        live = ttl > 0
      }
    })
  }

  /** In-process invalidation only: right for one process on its own store (the memory store). */
  static readonly layer: Layer.Layer<AuthCache> = Layer.effect(
    AuthCache,
    Effect.map(Effect.service(AuthCacheSettings), (options) => AuthCache.make(options))
  )
}

/** Changes remembered for loads still running; a load that outlived more keeps nothing. */
const recentChanges = 256

const concernsUser = (change: AuthChange, userId: string) => change._tag === "User" && change.userId === userId

/** A few seconds: long enough that a busy actor's requests share one load, short enough as a safety net. */
export const defaultTtl = Duration.seconds(5)

/** A user's memberships through the cache: `load` (the store) only when they are not held. */
export const cachedMemberships = (
  cache: AuthCache["Service"],
  userId: string,
  load: Effect.Effect<ReadonlyArray<MembershipRow>>
): Effect.Effect<ReadonlyArray<MembershipRow>> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const held = cache.memberships(userId, now)
    if (held !== undefined) return Effect.succeed(held)
    const ticket = cache.ticket()
    return Effect.map(load, (rows) => {
      cache.keepMemberships(ticket, userId, rows, now)
      return rows
    })
  })
