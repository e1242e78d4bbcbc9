import { AuthCache, AuthCacheSettings, AuthChange } from "@hostplane/core/identity/AuthCache"
import { Effect, Layer, Queue, Schedule } from "effect"
import { PgSession } from "../PgSession.ts"

/** The channel the triggers of migration identity/0002_notify_auth_changes notify: `u:<user id>`, `o:<org id>`. */
export const channel = "hostplane_auth"

/**
 * `AuthCache` kept true across replicas: every process listens for the triggers' notifications and forgets what they
 * name. The cache serves nothing until `LISTEN` is confirmed, nor while the connection is lost (reconnecting every
 * second), since a change made meanwhile would never be heard.
 */
export const layer: Layer.Layer<AuthCache, never, PgSession> = Layer.effect(
  AuthCache,
  Effect.gen(function* () {
    const session = yield* PgSession
    const cache = AuthCache.make({ ...(yield* AuthCacheSettings), paused: true })
    const follow = Effect.scoped(
      Effect.gen(function* () {
        const notes = yield* session.listen(channel)
        cache.resume()
        for (;;) {
          for (const note of yield* Queue.takeAll(notes)) cache.invalidate(AuthChange.parse(note.payload))
        }
      })
    ).pipe(
      Effect.onExit(() => Effect.sync(cache.pause)),
      Effect.tapError((error) => Effect.logWarning(`auth change feed lost (${error.message}); cache off until back`)),
      Effect.retry(Schedule.spaced("1 second"))
    )
    yield* Effect.forkScoped(follow)
    return cache
  })
)
