import createIdentityAndOrgs from "./0001_create_identity_and_orgs.ts"
import createMailOutboxAndAudit from "./0002_create_mail_outbox_and_audit.ts"
import createProjectsHostnamesOperations from "./0003_create_projects_hostnames_operations.ts"
import createDeployments from "./0004_create_deployments.ts"
import createSecretsAndAccess from "./0005_create_secrets_and_access.ts"
import addHostnameChecks from "./0006_add_hostname_checks.ts"
import createEdgeSessions from "./0007_create_edge_sessions.ts"
import createIdempotencyKeys from "./0008_create_idempotency_keys.ts"
import createJobs from "./0009_create_jobs.ts"
import addPasswordGeneration from "./0010_add_password_generation.ts"

/** Every migration of this package by `<id>_<name>`; a shipped entry is never edited, only followed. */
export const migrations = {
  "0001_create_identity_and_orgs": createIdentityAndOrgs,
  "0002_create_mail_outbox_and_audit": createMailOutboxAndAudit,
  "0003_create_projects_hostnames_operations": createProjectsHostnamesOperations,
  "0004_create_deployments": createDeployments,
  "0005_create_secrets_and_access": createSecretsAndAccess,
  "0006_add_hostname_checks": addHostnameChecks,
  "0007_create_edge_sessions": createEdgeSessions,
  "0008_create_idempotency_keys": createIdempotencyKeys,
  "0009_create_jobs": createJobs,
  "0010_add_password_generation": addPasswordGeneration
}
