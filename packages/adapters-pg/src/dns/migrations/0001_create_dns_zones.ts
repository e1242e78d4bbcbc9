import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * DNS zones (spec 4.14), unique across orgs, with the sealed DNSSEC key while signing; rrsets by zone, relative name
 * and type, their records as a JSON array of RDATA strings. The SOA and apex NS are not stored.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE dns_zones (
      name text PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs (id),
      serial bigint NOT NULL CHECK (serial >= 0),
      dnssec text NOT NULL CHECK (dnssec IN ('off', 'signing', 'ds_pending')),
      key_id text,
      key_ciphertext text,
      public_key text,
      key_tag integer,
      ds text,
      ds_recorded jsonb NOT NULL DEFAULT '[]',
      created_at timestamptz NOT NULL,
      CHECK ((dnssec = 'off') = (key_ciphertext IS NULL))
    )`
  yield* sql`CREATE INDEX dns_zones_org_id_idx ON dns_zones (org_id)`
  yield* sql`
    CREATE TABLE dns_rrsets (
      zone text NOT NULL REFERENCES dns_zones (name) ON DELETE CASCADE,
      name text NOT NULL,
      type text NOT NULL,
      ttl integer NOT NULL,
      records jsonb NOT NULL,
      PRIMARY KEY (zone, name, type)
    )`
})
