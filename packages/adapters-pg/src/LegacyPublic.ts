/** The table of hostplane's migrations record, in hostplane's schema (Effect's migrator's own default name). */
export const migrationsTable = "effect_sql_migrations"

/**
 * Every table that migrations 0001 to 0027 created, which an installation from before hostplane's own schema has in
 * `public` (`operations` only until 0009 dropped it). Later migrations only ever ran in the schema, so this list is
 * closed: a new migration never adds to it.
 */
export const legacyTables: ReadonlyArray<string> = [
  "users",
  "sessions",
  "oauth_states",
  "orgs",
  "memberships",
  "invites",
  "notifications",
  "mail_outbox",
  "audit_events",
  "projects",
  "hostnames",
  "operations",
  "deployments",
  "secrets",
  "access_policies",
  "access_codes",
  "edge_sessions",
  "idempotency_keys",
  "jobs",
  "node_revision",
  "project_revisions",
  "domains",
  "billing_subscriptions",
  "billing_webhooks",
  "ai_credit",
  "ai_ledger",
  "dns_zones",
  "dns_rrsets",
  "ai_keys",
  "email_addresses",
  "mail_log",
  "mail_notifications",
  "repos",
  "repo_ref_updates",
  "access_tokens",
  "ssh_keys",
  "databases",
  "database_tokens",
  "database_generations",
  "auth_grants",
  "auth_providers",
  "ai_calls",
  "storage_grants"
]

/** The functions those migrations created, by signature (`to_regprocedure`, `ALTER FUNCTION`). */
export const legacyFunctions: ReadonlyArray<string> = [
  "hostplane_auth_notify()",
  "hostplane_envelope_lock(text, text, text)"
]

/** The last migration that ran in `public`. */
export const legacyLastMigration = 27
