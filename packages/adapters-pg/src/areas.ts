import { AccessAreaPg } from "./access/AccessAreaPg.ts"
import { BillingAreaPg } from "./billing/BillingAreaPg.ts"
import { DatabaseAreaPg } from "./database/DatabaseAreaPg.ts"
import { DeploymentsAreaPg } from "./deployments/DeploymentsAreaPg.ts"
import { DomainsAreaPg } from "./domains/DomainsAreaPg.ts"
import { DnsAreaPg } from "./dns/DnsAreaPg.ts"
import { EmailAreaPg } from "./email/EmailAreaPg.ts"
import { EdgeAreaPg } from "./edge/EdgeAreaPg.ts"
import { EndUserAreaPg } from "./enduser/EndUserAreaPg.ts"
import { GitAreaPg } from "./git/GitAreaPg.ts"
import { IdempotencyAreaPg } from "./idempotency/IdempotencyAreaPg.ts"
import { HostnamesAreaPg } from "./hostnames/HostnamesAreaPg.ts"
import { IdentityAreaPg } from "./identity/IdentityAreaPg.ts"
import { JobsAreaPg } from "./jobs/JobsAreaPg.ts"
import { KernelAreaPg } from "./kernel/KernelAreaPg.ts"
import { LogsAreaPg } from "./logs/LogsAreaPg.ts"
import { MailAreaPg } from "./mail/MailAreaPg.ts"
import { OrgsAreaPg } from "./orgs/OrgsAreaPg.ts"
import { ProjectsAreaPg } from "./projects/ProjectsAreaPg.ts"
import { SecretsAreaPg } from "./secrets/SecretsAreaPg.ts"
import { StorageAreaPg } from "./storage/StorageAreaPg.ts"
import { TlsAreaPg } from "./tls/TlsAreaPg.ts"

/** Every area on PostgreSQL, in core's order. */
export const areas = [
  KernelAreaPg,
  JobsAreaPg,
  MailAreaPg,
  OrgsAreaPg,
  IdentityAreaPg,
  ProjectsAreaPg,
  DeploymentsAreaPg,
  SecretsAreaPg,
  AccessAreaPg,
  HostnamesAreaPg,
  DnsAreaPg,
  DatabaseAreaPg,
  EndUserAreaPg,
  EdgeAreaPg,
  IdempotencyAreaPg,
  DomainsAreaPg,
  BillingAreaPg,
  EmailAreaPg,
  StorageAreaPg,
  GitAreaPg,
  LogsAreaPg,
  TlsAreaPg
] as const
