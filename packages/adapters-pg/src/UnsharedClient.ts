import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"

/**
 * A pool of unshared connections beside the multiplexed one, for what holds a connection for long (the job runner's and
 * the database add-on's session advisory locks; `PgSession` holds its own for the LISTEN feeds). Pinning a shared
 * connection for good strands every statement another fiber had already been handed on it: effect's `Pool.reserve`
 * takes the connection out of circulation but cannot take it back from a borrower, whose statement then waits for it
 * forever. The server hung at start that way about half the time on a busy machine, its last statements a
 * `pg_try_advisory_lock` and a `LISTEN`. Connections open on use (making the pool opens none, so it cannot fail).
 */
export const unsharedClient = (maxConnections: number) =>
  Effect.flatMap(PgClient.PgClient, (shared) =>
    PgClient.make({ ...shared.config, multiplex: false, maxConnections })
  ).pipe(Effect.provide(Reactivity.layer), Effect.orDie)
