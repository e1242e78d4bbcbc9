import { Effect, Schema, SchemaTransformation } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import { transaction } from "./Transaction.ts"

/** A `timestamptz` column (a `Date` from the driver) as the RFC 3339 UTC string of the models, with milliseconds. */
export const Timestamp = Schema.Date.pipe(
  Schema.decodeTo(
    Schema.String,
    SchemaTransformation.transform({ decode: (date) => date.toISOString(), encode: (iso) => new Date(iso) })
  )
)

/** A nullable `timestamptz` column. */
export const NullableTimestamp = Schema.NullOr(Timestamp)

/**
 * Runs `write` in its own savepoint and answers `onConflict()` when it breaks the unique constraint named
 * `constraint`. PostgreSQL aborts a transaction at a failed statement, so the savepoint keeps the caller's
 * transaction usable after the conflict. Every other SQL failure stays a failure for the caller to treat as a defect.
 */
export const onUniqueViolation =
  <B>(sql: SqlClient.SqlClient, constraint: string, onConflict: () => B) =>
  <A, R>(write: Effect.Effect<A, SqlError.SqlError, R>) =>
    transaction(sql)(write).pipe(
      Effect.catchReason("SqlError", "UniqueViolation", (reason, error) =>
        reason.constraint === constraint ? Effect.succeed(onConflict()) : Effect.fail(error)
      )
    )

/** A sealed value in one text column: `<keyId>:<ciphertext>` (a key id holds no colon). */
export const joinSealed = (sealed: { readonly keyId: string; readonly ciphertext: string }): string =>
  `${sealed.keyId}:${sealed.ciphertext}`

export const splitSealed = (text: string): { readonly keyId: string; readonly ciphertext: string } => {
  const at = text.indexOf(":")
  return { keyId: text.slice(0, at), ciphertext: text.slice(at + 1) }
}
