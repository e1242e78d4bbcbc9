import { PgClient } from "@effect/sql-pg"
import { CoreWatch } from "@hostplane/http"
import { Duration, Effect, Fiber, Layer } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"

/** How often the database is asked, and how long an answer may take before it counts as not answering. */
const pingEvery = Duration.seconds(1)
const answerWithin = Duration.seconds(3)

/**
 * The API's `CoreWatch` (decisions.md part 15's outage rule): `SELECT 1` every second on a connection of its own (so
 * it never queues behind the requests' statements), and the database counts as down from the first ping without an
 * answer in 3 s until one answers again. A stopped PostgreSQL fails a ping at once; a frozen one (SIGSTOP, a stuck
 * volume, a half-open network) only by this timeout: the kernel still accepts its connections and keepalives. A
 * request in flight then answers 503 `no_core` within about 4 s instead of waiting on its statement forever. A write
 * arriving while it counts as down asks again before it is refused (`recheck`).
 */
export const coreWatchLayer = Layer.effect(
  CoreWatch,
  Effect.gen(function* () {
    const shared = yield* PgClient.PgClient
    const ping = yield* PgClient.make({
      ...shared.config,
      multiplex: false,
      maxConnections: 1,
      connectTimeout: answerWithin
    }).pipe(Effect.provide(Reactivity.layer), Effect.orDie)
    let down = false
    const waiting = new Set<() => void>()
    const setDown = (now: boolean, why: string) =>
      Effect.suspend(() => {
        if (now === down) return Effect.void
        down = now
        if (!now) return Effect.logInfo("the control database answers again")
        for (const onDown of [...waiting]) onDown()
        waiting.clear()
        return Effect.logWarning(`the control database does not answer (${why}); API requests answer 503 no_core`)
      })
    const once = Effect.gen(function* () {
      // The statement runs in a fiber of its own: abandoning a statement on a frozen server waits for its cancel.
      const statement = yield* Effect.forkDetach(ping`SELECT 1`, { startImmediately: true })
      const answer = yield* Fiber.await(statement).pipe(Effect.timeout(answerWithin), Effect.option)
      if (answer._tag === "None") {
        statement.interruptUnsafe()
        return yield* setDown(true, `no answer to a ping within ${Duration.format(answerWithin)}`)
      }
      if (answer.value._tag === "Failure") return yield* setDown(true, "a ping failed")
      return yield* setDown(false, "")
    })
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(once, Effect.sleep(pingEvery))))
    // One ping at a time for every request that asks while the database counts as down.
    const scope = yield* Effect.scope
    let asking: Fiber.Fiber<void> | undefined
    const ask = Effect.suspend(() =>
      asking !== undefined
        ? Effect.succeed(asking)
        : Effect.tap(Effect.forkIn(once, scope), (fiber) =>
            Effect.sync(() => {
              asking = fiber
              fiber.addObserver(() => {
                if (asking === fiber) asking = undefined
              })
            })
          )
    )
    return {
      isDown: () => down,
      onDown: (onDown) => {
        if (down) {
          onDown()
          return () => {}
        }
        waiting.add(onDown)
        return () => void waiting.delete(onDown)
      },
      recheck: Effect.suspend(() =>
        down ? Effect.map(Effect.flatMap(ask, Fiber.await), () => !down) : Effect.succeed(true)
      ),
      exempt: new Set(["/livez", "/readyz"])
    }
  })
)
