import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The edge's certificates (decisions.md part 16), so every replica serves the same: one row per hostname (removed
 * with the hostname), the ACME account, and the HTTP-01 key authorizations of orders in flight. Private keys are
 * sealed (`*_key_id`, `*_ciphertext`). A trigger announces every certificate change on `hostplane_tls` once it
 * commits, so each replica's listener reloads that name, whichever write (or cascade) made it.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE tls_certificates (
      name text PRIMARY KEY REFERENCES hostnames (name) ON DELETE CASCADE,
      status text NOT NULL CHECK (status IN ('pending', 'issued', 'failed')),
      chain text,
      key_id text,
      key_ciphertext text,
      expires_at timestamptz,
      order_url text,
      order_key_id text,
      order_key_ciphertext text,
      last_error text,
      failures integer NOT NULL DEFAULT 0,
      retry_at timestamptz,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE TABLE tls_account (
      id integer PRIMARY KEY CHECK (id = 1),
      key_id text NOT NULL,
      key_ciphertext text NOT NULL,
      url text
    )`
  yield* sql`
    CREATE TABLE tls_challenges (
      token text PRIMARY KEY,
      key_authorization text NOT NULL,
      created_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE FUNCTION hostplane_tls_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('hostplane_tls', CASE WHEN TG_OP = 'DELETE' THEN OLD.name ELSE NEW.name END);
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER tls_certificates_notify AFTER INSERT OR UPDATE OR DELETE ON tls_certificates
    FOR EACH ROW EXECUTE FUNCTION hostplane_tls_notify()`
})
