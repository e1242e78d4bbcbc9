import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** The outgoing mail queue and the append-only audit log, which has no foreign key so it outlives orgs. */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE mail_outbox (
      id text PRIMARY KEY,
      from_address text NOT NULL,
      to_address text NOT NULL,
      subject text NOT NULL,
      body text NOT NULL,
      state text NOT NULL CHECK (state IN ('queued', 'sent', 'failed', 'cancelled')),
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL,
      last_error text,
      sent_at timestamptz,
      created_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_at) WHERE state = 'queued'`
  yield* sql`
    CREATE TABLE audit_events (
      seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      action text NOT NULL,
      org_id text,
      actor_id text,
      target text,
      data jsonb NOT NULL,
      at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX audit_events_org_idx ON audit_events (org_id, seq)`
  yield* sql`CREATE INDEX audit_events_action_idx ON audit_events (action, seq)`
})
