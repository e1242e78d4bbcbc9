import * as Pg from "@hostplane/adapters-pg"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"

/**
 * `GET /livez` and `GET /readyz` on the API listener, without authentication (decisions.md part 15). Live means the
 * process answers at all: a balancer restarts it otherwise. Ready means it can serve: PostgreSQL answers and carries
 * every migration of this version; else 503 `not_ready` with each check, so the balancer sends requests elsewhere.
 */
export const healthRoutes = Layer.mergeAll(
  HttpRouter.add("GET", "/livez", HttpServerResponse.jsonUnsafe({ status: "live" })),
  HttpRouter.add(
    "GET",
    "/readyz",
    Effect.map(Pg.PgDatabase.readiness(), (checks) =>
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
