import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * End-user sign-in (spec 4.9): a granted project's settings, and its providers with the client secret sealed
 * (`<keyId>:<ciphertext>`). The users and sessions themselves live in the project's own database, not here.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE auth_grants (
      project_id text PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
      session_days integer NOT NULL CHECK (session_days BETWEEN 1 AND 365),
      allow_signups boolean NOT NULL,
      granted_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE TABLE auth_providers (
      project_id text NOT NULL REFERENCES auth_grants (project_id) ON DELETE CASCADE,
      provider text NOT NULL CHECK (provider IN ('github', 'google', 'discord')),
      client_id text NOT NULL,
      client_secret_sealed text NOT NULL,
      updated_at timestamptz NOT NULL,
      PRIMARY KEY (project_id, provider)
    )`
})
