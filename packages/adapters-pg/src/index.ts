import { Layer } from "effect"
import * as AccessStorePg from "./access/AccessStorePg.ts"
import * as AuditLogPg from "./kernel/AuditLogPg.ts"
import * as TransactorPg from "./kernel/TransactorPg.ts"
import * as MailOutboxPg from "./mail/MailOutboxPg.ts"
import * as DeploymentStorePg from "./deployments/DeploymentStorePg.ts"
import * as EdgeSessionStorePg from "./edge/EdgeSessionStorePg.ts"
import * as HostnameStorePg from "./hostnames/HostnameStorePg.ts"
import * as IdempotencyStorePg from "./idempotency/IdempotencyStorePg.ts"
import * as JobStorePg from "./jobs/JobStorePg.ts"
import * as OrgStorePg from "./orgs/OrgStorePg.ts"
import * as ProjectStorePg from "./projects/ProjectStorePg.ts"
import * as SecretStorePg from "./secrets/SecretStorePg.ts"
import * as UserStorePg from "./identity/UserStorePg.ts"

export * as EmbeddedPostgres from "./embedded/EmbeddedPostgres.ts"
export * as PgDatabase from "./PgDatabase.ts"
export { migrations } from "./migrations/index.ts"
export {
  AccessStorePg,
  AuditLogPg,
  DeploymentStorePg,
  EdgeSessionStorePg,
  HostnameStorePg,
  IdempotencyStorePg,
  JobStorePg,
  MailOutboxPg,
  OrgStorePg,
  ProjectStorePg,
  SecretStorePg,
  TransactorPg,
  UserStorePg
}

/** Every store port of core on one `SqlClient` built by `PgDatabase` (it relies on that client's name transforms). */
export const layer = Layer.mergeAll(
  UserStorePg.layer,
  OrgStorePg.layer,
  MailOutboxPg.layer,
  AuditLogPg.layer,
  TransactorPg.layer,
  ProjectStorePg.layer,
  JobStorePg.layer,
  DeploymentStorePg.layer,
  EdgeSessionStorePg.layer,
  SecretStorePg.layer,
  AccessStorePg.layer,
  HostnameStorePg.layer,
  IdempotencyStorePg.layer
)
