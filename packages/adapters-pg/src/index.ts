import { Layer } from "effect"
import { providersOf, storesOf } from "./Area.ts"
import { areas } from "./areas.ts"
import * as AccessStorePg from "./access/AccessStorePg.ts"
import * as AuditLogPg from "./kernel/AuditLogPg.ts"
import * as EnvelopeStorePg from "./kernel/EnvelopeStorePg.ts"
import * as TransactorPg from "./kernel/TransactorPg.ts"
import * as MailOutboxPg from "./mail/MailOutboxPg.ts"
import * as DeploymentStorePg from "./deployments/DeploymentStorePg.ts"
import * as ZoneStorePg from "./dns/ZoneStorePg.ts"
import * as EdgeSessionStorePg from "./edge/EdgeSessionStorePg.ts"
import * as HostnameStorePg from "./hostnames/HostnameStorePg.ts"
import * as IdempotencyStorePg from "./idempotency/IdempotencyStorePg.ts"
import * as JobStorePg from "./jobs/JobStorePg.ts"
import * as OrgStorePg from "./orgs/OrgStorePg.ts"
import * as ProjectStorePg from "./projects/ProjectStorePg.ts"
import * as SecretStorePg from "./secrets/SecretStorePg.ts"
import * as UserStorePg from "./identity/UserStorePg.ts"
import { PgSession } from "./PgSession.ts"

export * as EmbeddedPostgres from "./embedded/EmbeddedPostgres.ts"
export * as PgDatabase from "./PgDatabase.ts"
export { PgSession } from "./PgSession.ts"
export { legacyMigrations, migrations } from "./migrations/index.ts"
export { type Migration, migrationsOf } from "./Migrator.ts"
export { type AnyAreaPg, type AreaPg, areaPg, type Migrations, providersOf, storesOf } from "./Area.ts"
export { areas } from "./areas.ts"
export {
  AccessStorePg,
  AuditLogPg,
  DeploymentStorePg,
  EdgeSessionStorePg,
  EnvelopeStorePg,
  HostnameStorePg,
  IdempotencyStorePg,
  MailOutboxPg,
  JobStorePg,
  OrgStorePg,
  ProjectStorePg,
  SecretStorePg,
  TransactorPg,
  UserStorePg,
  ZoneStorePg
}

/**
 * Every store port of core on one `SqlClient` built by `PgDatabase` (it relies on that client's name transforms), their
 * feeds and the job runners' locks on one session (`PgSession`).
 */
export const layer = storesOf(areas).pipe(Layer.provide(PgSession.layer))

/** Every area's PostgreSQL-level provider adapters from `SERVICE_*` (database clusters, the end-user directory). */
export const providersFromEnv = providersOf(areas)
export * as DatabaseNodeEmbedded from "./database/DatabaseNodeEmbedded.ts"
export * as EndUserDirectoryPg from "./enduser/EndUserDirectoryPg.ts"
