import * as Pg from "@hostplane/adapters-pg"
import { Duration, Effect, Fiber, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"

/**
 * `GET /livez` and `GET /readyz` on the API listener, without authentication (decisions.md part 15). Live means the
 * process answers at all: a balancer restarts it otherwise. Ready means it can serve: PostgreSQL answers and carries
 * every migration of this version; else 503 `not_ready` with each check, so the balancer sends requests elsewhere.
 */
/**
 * The readiness checks within 2 s even on a frozen database: the checks run in a fiber of their own, left behind when
 * late, since abandoning a statement waits for the driver's cancel, which a frozen server never answers.
 */
const boundedReadiness = Effect.flatMap(Effect.forkDetach(Pg.PgDatabase.readiness(Duration.infinity)), (fiber) =>
  Fiber.await(fiber).pipe(
    Effect.timeout(Duration.seconds(2)),
    Effect.flatMap((exit) => exit),
    Effect.catchCause(() =>
      Effect.sync(() => {
        fiber.interruptUnsafe()
        return {
          database: { ok: false, error: "no answer in time" },
          migrations: { ok: false, applied: null, latest: Pg.PgDatabase.latestMigration }
        }
      })
    )
  )
)

export const healthRoutes = Layer.mergeAll(
  HttpRouter.add("GET", "/livez", HttpServerResponse.jsonUnsafe({ status: "live" })),
  HttpRouter.add(
    "GET",
    "/readyz",
    Effect.map(boundedReadiness, (checks) =>
      checks.database.ok && checks.migrations.ok
        ? HttpServerResponse.jsonUnsafe({ status: "ready", checks })
        : HttpServerResponse.jsonUnsafe(
            {
              code: "not_ready",
              message: checks.database.ok
                ? "the database lacks migrations of this version"
                : "the control database does not answer",
              details: { checks }
            },
            { status: 503, headers: { "cache-control": "no-store" } }
          )
    )
  )
)
