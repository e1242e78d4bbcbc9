import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Project mail (spec 4.8): each project's address, kept after a revoke (and after the project is gone) so an address
 * is never handed to another project; the mail log with the raw message; and the SNS message ids already applied,
 * whose primary key makes a replayed notification change nothing across replicas.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE email_addresses (
      project_id text PRIMARY KEY,
      address text NOT NULL CONSTRAINT email_addresses_address_key UNIQUE,
      granted boolean NOT NULL
    )`
  yield* sql`
    CREATE TABLE mail_log (
      id text PRIMARY KEY,
      project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      direction text NOT NULL,
      mail_from text NOT NULL,
      mail_to text NOT NULL,
      subject text NOT NULL,
      outcome text NOT NULL,
      size integer NOT NULL,
      spf text,
      raw bytea,
      provider_message_id text,
      created_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX mail_log_project_created ON mail_log (project_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX mail_log_provider_message ON mail_log (provider_message_id)
    WHERE provider_message_id IS NOT NULL`
  yield* sql`CREATE INDEX mail_log_created ON mail_log (created_at)`
  yield* sql`
    CREATE TABLE mail_notifications (
      message_id text PRIMARY KEY,
      type text NOT NULL,
      received_at timestamptz NOT NULL
    )`
})
