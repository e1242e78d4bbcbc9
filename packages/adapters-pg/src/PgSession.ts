import { PgClient, PgConnection } from "@effect/sql-pg"
import { Context, Effect, Exit, Layer, type Queue, Scope, Semaphore } from "effect"
import type { SqlError } from "effect/sql/SqlError"

interface Held {
  readonly connection: PgConnection.PgConnection
  readonly scope: Scope.Closeable
}

/**
 * The process's one long-lived PostgreSQL session, for what lasts as long as a session does: every `LISTEN` (the auth
 * cache's, the job runner's, the node revision's, the zones', the certificates' and the runtime logs' feeds) and the
 * job runners' session locks. Each connection is a backend, so one for all of them instead of one each. Opened at the
 * first use and held while the process lives; its loss fails every queue and every lock on it at once, so each one's
 * own recovery runs, and the first to come back opens the next session for all.
 */
export class PgSession extends Context.Service<
  PgSession,
  {
    /** `PgClient.listen` on the session: the queue of `channel`'s notifications until the scope closes. */
    readonly listen: (
      channel: string
    ) => Effect.Effect<Queue.Dequeue<PgConnection.Notification, SqlError>, SqlError, Scope.Scope>
    /** Runs `f` on the session's connection, or on the next one when it died; a session lock it takes ends with it. */
    readonly use: <A, E, R>(
      f: (connection: PgConnection.PgConnection) => Effect.Effect<A, E, R>
    ) => Effect.Effect<A, E | SqlError, R>
  }
>()("@hostplane/adapters-pg/PgSession") {
  static readonly layer: Layer.Layer<PgSession, never, PgClient.PgClient> = Layer.effect(
    PgSession,
    Effect.gen(function* () {
      const config = (yield* PgClient.PgClient).config
      const scope = yield* Effect.scope
      const opening = yield* Semaphore.make(1)
      let held: Held | undefined

      // Pinned for good: every statement and listen runs on the pinned view, which pins again as a no-op.
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

      const use = <A, E, R>(f: (connection: PgConnection.PgConnection) => Effect.Effect<A, E | SqlError, R>) =>
        Effect.flatMap(current, (open) =>
          f(open.connection).pipe(
            // A dead connection fails every statement at once, whatever ended it (a FATAL from PostgreSQL before it
            // closed is no ConnectionError): then the next one serves this use and the others'.
            Effect.catch((error) =>
              Effect.flatMap(Effect.exit(open.connection.query("SELECT 1", [], false)), (alive) =>
                Exit.isSuccess(alive)
                  ? Effect.fail(error)
                  : drop(open).pipe(
                      Effect.andThen(current),
                      Effect.flatMap((fresh) => f(fresh.connection))
                    )
              )
            )
          )
        )
      return PgSession.of({
        listen: (channel) => use((connection) => connection.listen(channel)),
        use
      })
    })
  )
}
