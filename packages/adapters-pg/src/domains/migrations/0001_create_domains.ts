import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Domains (spec 4.13), unique by name across every org. A purchase in progress keeps its saga state in `purchase`
 * (years, quoted price, whether the registrar holds it yet) and the registrant contact only sealed, in
 * `contact_key_id`/`contact_ciphertext`, cleared as soon as the registrar has it.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE domains (
      name text PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
      status text NOT NULL CHECK (status IN ('registering', 'active', 'imported', 'transferred_out', 'expired')),
      source text NOT NULL CHECK (source IN ('purchase', 'import')),
      expires_at timestamptz,
      auto_renew boolean NOT NULL,
      locked boolean NOT NULL,
      nameservers jsonb NOT NULL,
      created_at timestamptz NOT NULL,
      purchase jsonb,
      contact_key_id text,
      contact_ciphertext text,
      CHECK ((contact_key_id IS NULL) = (contact_ciphertext IS NULL))
    )`
  yield* sql`CREATE INDEX domains_org_idx ON domains (org_id, name)`
})
