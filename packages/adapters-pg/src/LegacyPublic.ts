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

/**
 * The migrations of the earlier global numbering, by the `migration_id` that numbering gave them (index + 1), as
 * `<area>/<area's own id>`. A database migrated then records each as (`migration_id`, the file's name without its
 * number), which is how the migrator recognizes them; a fresh database runs them first, in this order, and records
 * them the same way, so old and new installations keep one record. Closed: a new migration is only its area's.
 */
export const legacyMigrationIds: ReadonlyArray<string> = [
  "identity/0001_create_identity_and_orgs",
  "mail/0001_create_mail_outbox_and_audit",
  "projects/0001_create_projects_hostnames_operations",
  "deployments/0001_create_deployments",
  "secrets/0001_create_secrets_and_access",
  "hostnames/0001_add_hostname_checks",
  "edge/0001_create_edge_sessions",
  "idempotency/0001_create_idempotency_keys",
  "jobs/0001_create_jobs",
  "access/0001_add_password_generation",
  "kernel/0001_create_node_revisions",
  "domains/0001_create_domains",
  "billing/0001_create_billing_and_credit",
  "dns/0001_create_dns_zones",
  "billing/0002_create_ai_keys",
  "email/0001_create_mail_log",
  "git/0001_create_git",
  "database/0001_create_databases",
  "enduser/0001_create_auth_addon",
  "dns/0002_add_managed_rrsets",
  "identity/0002_notify_auth_changes",
  "email/0002_add_mail_log_pending",
  "billing/0003_create_ai_calls",
  "storage/0001_create_storage",
  "billing/0004_add_ai_call_leases",
  "kernel/0002_add_envelope_lock",
  "email/0003_add_mail_log_leases",
  "logs/0001_create_worker_logs",
  "tls/0001_create_tls_certificates",
  "git/0002_add_repo_deploy_on_push"
]
