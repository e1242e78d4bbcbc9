import { Transactor } from "@hostplane/core/kernel/Transactor"
import { Effect, Layer } from "effect"
import { SqlClient, SqlError } from "effect/sql"

/** `Transactor` as `sql.withTransaction` (a savepoint when nested); a failed BEGIN or COMMIT is a defect. */
export const layer = Layer.effect(
  Transactor,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return Transactor.of({
      withTransaction: (effect) =>
        sql
          .withTransaction(effect)
          .pipe(Effect.catch((error) => (SqlError.isSqlError(error) ? Effect.die(error) : Effect.fail(error))))
    })
  })
)
