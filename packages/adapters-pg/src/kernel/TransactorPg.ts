import { Transactor } from "@hostplane/core/kernel/Transactor"
import { Effect, Layer } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { transaction } from "../internal/Transaction.ts"

/** `Transactor` as `transaction` (`sql.withTransaction`'s lighter twin; a savepoint when nested); a failed BEGIN or COMMIT is a defect. */
export const layer = Layer.effect(
  Transactor,
  Effect.gen(function* () {
    const inTransaction = transaction(yield* SqlClient.SqlClient)
    return Transactor.of({
      withTransaction: (effect) =>
        inTransaction(effect).pipe(
          Effect.catch((error) => (SqlError.isSqlError(error) ? Effect.die(error) : Effect.fail(error)))
        )
    })
  })
)
