import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Plan billing (spec 4.15) and the AI credit ledger (spec 4.10): one subscription row per org, the webhook ids
 * already received (the primary key makes a repeated delivery apply once across replicas), each org's balance and
 * its ledger. Every balance change is one ledger row written in the same statement's transaction.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE billing_subscriptions (
      org_id text PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
      subscription_id text,
      status text,
      period_end timestamptz,
      cancel_at_period_end boolean NOT NULL DEFAULT false,
      event_at timestamptz,
      customer_since timestamptz,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE TABLE billing_webhooks (
      webhook_id text PRIMARY KEY,
      type text NOT NULL,
      received_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE TABLE ai_credit (
      org_id text PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
      balance_micro_cents bigint NOT NULL DEFAULT 0,
      has_payment_method boolean NOT NULL DEFAULT false,
      autotopup_enabled boolean NOT NULL DEFAULT false,
      autotopup_amount_micro_cents bigint,
      autotopup_threshold_micro_cents bigint,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE TABLE ai_ledger (
      ledger_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
      kind text NOT NULL CHECK (kind IN ('call', 'topup', 'adjust')),
      amount_micro_cents bigint NOT NULL,
      project_name text,
      model text,
      created_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX ai_ledger_org_idx ON ai_ledger (org_id, ledger_id DESC)`
})
