import { Context, Effect, Option, Scope, Semaphore } from "effect"
import { type SqlClient, type SqlConnection, SqlError } from "effect/sql"

/** A level of a transaction `transaction` began: its pinned connection, and a lock for the savepoints directly inside it (made on first use). */
interface Open {
  readonly conn: SqlConnection.Connection
  savepoints: Semaphore.Semaphore | undefined
}

/** The transaction this fibre runs in, when `transaction` began it. */
class OpenTransaction extends Context.Service<OpenTransaction, Open>()(
  "@hostplane/adapters-pg/internal/Transaction/OpenTransaction"
) {}

/** PostgreSQL answers `ROLLBACK` to a `COMMIT` of an aborted transaction: that commit failed. */
const commit = (conn: SqlConnection.Connection) =>
  Effect.flatMap(conn.executeRaw("COMMIT", []), (result) =>
    (result as { readonly command?: string } | undefined)?.command === "ROLLBACK"
      ? Effect.fail(
          new SqlError.SqlError({
            reason: new SqlError.UnknownError({
              cause: new Error("COMMIT rolled back an aborted transaction"),
              message: "COMMIT rolled back an aborted transaction",
              operation: "commit"
            })
          })
        )
      : Effect.void
  )

/**
 * `sql.withTransaction` with less per call (its wrapper is about a quarter of a secret put's fibre
 * steps, and copies the request's ~110 services three times; `bench:write-ab`, server CPU per secret put, medians of 4
 * paired runs: 0.87x with spans off beside it, which alone gave 0.96x; the checkout without the request's services
 * 0.88x more): `BEGIN` on a pinned connection, the effect with that
 * connection as the client's transaction connection, `COMMIT` on success and `ROLLBACK` on failure or interruption;
 * nested, a savepoint (`RELEASE`d on success, rolled back to on failure), one at a time per transaction, as
 * `sql.withTransaction` nests. Unlike it, no span, no `sql.afterCommit` buffer and no deferred `Reactivity`
 * invalidations (nothing here uses them). Every transaction of the shared client begins here: a
 * `sql.withTransaction` nested inside one of these would fail (it needs state only its own outer call provides).
 */
export const transaction =
  (sql: SqlClient.SqlClient) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError.SqlError, R> =>
    Effect.withFiber((fiber) => {
      const outer = Context.getOption(fiber.context, sql.transactionService)
      const open = Context.getOrUndefined(fiber.context, OpenTransaction)
      if (Option.isSome(outer)) {
        const [conn, depth] = outer.value
        // A transaction `sql.withTransaction` began (a migration): its own savepoint.
        if (open === undefined || open.conn !== conn) return sql.withTransaction(effect)
        return savepoint(sql, open, depth + 1, effect)
      }
      return Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(Scope.make(), (scope) =>
          Effect.onExit(
            Effect.flatMap(bare(Scope.provide(restore(sql.reserve), scope)), (conn) =>
              Effect.andThen(
                conn.execute("BEGIN", [], undefined),
                Effect.matchCauseEffect(
                  restore(effect).pipe(
                    Effect.provideService(sql.transactionService, [conn, 0] as const),
                    Effect.provideService(OpenTransaction, { conn, savepoints: undefined })
                  ),
                  {
                    onSuccess: (value) => Effect.as(commit(conn), value),
                    onFailure: (cause) =>
                      Effect.andThen(Effect.orDie(conn.execute("ROLLBACK", [], undefined)), Effect.failCause(cause))
                  }
                )
              )
            ),
            (exit) => bare(Scope.close(scope, exit))
          )
        )
      )
    })

/**
 * The pool's checkout and its release, without the request's services: `acquireRelease` runs each release with the
 * services of its acquisition merged back into the fibre's, which copied the request's ~110 services about four times
 * per transaction. The pool needs none of them.
 */
const bare = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.updateContext(effect, () => Context.empty())

const savepoint = <A, E, R>(
  sql: SqlClient.SqlClient,
  open: Open,
  depth: number,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | SqlError.SqlError, R> => {
  const { conn } = open
  const name = `effect_sql_${depth}`
  const lock = (open.savepoints ??= Semaphore.makeUnsafe(1))
  return lock.withPermit(
    Effect.uninterruptibleMask((restore) =>
      Effect.andThen(
        conn.execute(`SAVEPOINT ${name}`, [], undefined),
        Effect.matchCauseEffect(
          restore(effect).pipe(
            Effect.provideService(sql.transactionService, [conn, depth] as const),
            // Its own savepoints wait for one another, not for this one (which holds the outer level's lock).
            Effect.provideService(OpenTransaction, { conn, savepoints: undefined })
          ),
          {
            onSuccess: (value) => Effect.as(conn.execute(`RELEASE SAVEPOINT ${name}`, [], undefined), value),
            onFailure: (cause) =>
              Effect.orDie(conn.execute(`ROLLBACK TO SAVEPOINT ${name}`, [], undefined)).pipe(
                Effect.andThen(Effect.orDie(conn.execute(`RELEASE SAVEPOINT ${name}`, [], undefined))),
                Effect.andThen(Effect.failCause(cause))
              )
          }
        )
      )
    )
  )
}
