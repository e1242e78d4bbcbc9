import { Context, Effect } from "effect"

/** Runs an effect as one atomic unit of the store: every store write and audit row inside it commits together. */
export class Transactor extends Context.Service<
  Transactor,
  {
    readonly withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  }
>()("@hostplane/core/kernel/Transactor") {}
