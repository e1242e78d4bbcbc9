import { PgClient, PgConnection } from "@effect/sql-pg"
import { Context, Effect, Exit, Layer, type Queue, Scope, Semaphore } from "effect"
import type { SqlError } from "effect/sql/SqlError"

interface Held {
  readonly connection: PgConnection.PgConnection
  readonly scope: Scope.Closeable
}

/**
 * Every `LISTEN` of a process on one connection of its own, opened at the first and held while the process lives: each
 * connection is a backend, so one for the auth cache, the job runner, the node revision's watchers, the zones, the
 * certificates and the runtime logs instead of one each. Its loss fails every queue at once, so each feed's own
 * recovery runs, and the first to listen again opens the next connection for all of them.
 */
export class PgNotifications extends Context.Service<
  PgNotifications,
  {
    /** `PgClient.listen` on the shared connection: the queue of `channel`'s notifications until the scope closes. */
    readonly listen: (
      channel: string
    ) => Effect.Effect<Queue.Dequeue<PgConnection.Notification, SqlError>, SqlError, Scope.Scope>
  }
>()("@hostplane/adapters-pg/PgNotifications") {
  static readonly layer: Layer.Layer<PgNotifications, never, PgClient.PgClient> = Layer.effect(
    PgNotifications,
    Effect.gen(function* () {
      const config = (yield* PgClient.PgClient).config
      const scope = yield* Effect.scope
      const opening = yield* Semaphore.make(1)
      let held: Held | undefined

      // Pinned for good: every listen runs on the pinned view, which pins again as a no-op.
      const current = opening.withPermit(
        Effect.suspend(() => {
          if (held !== undefined) return Effect.succeed(held)
          return Effect.gen(function* () {
            const own = yield* Scope.fork(scope)
            const connection = yield* PgConnection.make({ ...config, multiplex: false }).pipe(
              Effect.flatMap((connection) => connection.pin),
              Scope.provide(own),
              Effect.onError(() => Scope.close(own, Exit.void))
            )
            held = { connection, scope: own }
            return held
          })
        })
      )
      const drop = (lost: Held) =>
        opening.withPermit(
          Effect.suspend(() => {
            if (held !== lost) return Effect.void
            held = undefined
            return Scope.close(lost.scope, Exit.void)
          })
        )

      const listen = (channel: string) =>
        Effect.flatMap(current, (open) =>
          open.connection.listen(channel).pipe(
            // A dead connection fails every statement at once, whatever ended it (a FATAL from PostgreSQL before it
            // closed is no ConnectionError): then the next one serves this listen and the others'.
            Effect.catch((error) =>
              Effect.flatMap(Effect.exit(open.connection.query("SELECT 1", [], false)), (alive) =>
                Exit.isSuccess(alive)
                  ? Effect.fail(error)
                  : drop(open).pipe(
                      Effect.andThen(current),
                      Effect.flatMap((fresh) => fresh.connection.listen(channel))
                    )
              )
            )
          )
        )
      return PgNotifications.of({ listen })
    })
  )
}
