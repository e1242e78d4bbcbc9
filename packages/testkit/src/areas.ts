import { AccessAreaMemory } from "./access/AccessAreaMemory.ts"
import { BillingAreaMemory } from "./billing/BillingAreaMemory.ts"
import { DeploymentsAreaMemory } from "./deployments/DeploymentsAreaMemory.ts"
import { DomainsAreaMemory } from "./domains/DomainsAreaMemory.ts"
import { DnsAreaMemory } from "./dns/DnsAreaMemory.ts"
import { EmailAreaMemory } from "./email/EmailAreaMemory.ts"
import { EdgeAreaMemory } from "./edge/EdgeAreaMemory.ts"
import { EndUserAreaMemory } from "./enduser/EndUserAreaMemory.ts"
import { GitAreaMemory } from "./git/GitAreaMemory.ts"
import { IdempotencyAreaMemory } from "./idempotency/IdempotencyAreaMemory.ts"
import { HostnamesAreaMemory } from "./hostnames/HostnamesAreaMemory.ts"
import { IdentityAreaMemory } from "./identity/IdentityAreaMemory.ts"
import { JobsAreaMemory } from "./jobs/JobsAreaMemory.ts"
import { KernelAreaMemory } from "./kernel/KernelAreaMemory.ts"
import { LogsAreaMemory } from "./logs/LogsAreaMemory.ts"
import { DatabaseAreaMemory } from "./database/DatabaseAreaMemory.ts"
import { MailAreaMemory } from "./mail/MailAreaMemory.ts"
import { OrgsAreaMemory } from "./orgs/OrgsAreaMemory.ts"
import { ProjectsAreaMemory } from "./projects/ProjectsAreaMemory.ts"
import { SecretsAreaMemory } from "./secrets/SecretsAreaMemory.ts"
import { StorageAreaMemory } from "./storage/StorageAreaMemory.ts"
import { TlsAreaMemory } from "./tls/TlsAreaMemory.ts"

/** Every area's memory stores and contract suites, in core's order. */
export const areas = [
  KernelAreaMemory,
  JobsAreaMemory,
  MailAreaMemory,
  OrgsAreaMemory,
  IdentityAreaMemory,
  ProjectsAreaMemory,
  DeploymentsAreaMemory,
  SecretsAreaMemory,
  AccessAreaMemory,
  HostnamesAreaMemory,
  DnsAreaMemory,
  DatabaseAreaMemory,
  EndUserAreaMemory,
  EdgeAreaMemory,
  IdempotencyAreaMemory,
  DomainsAreaMemory,
  BillingAreaMemory,
  EmailAreaMemory,
  StorageAreaMemory,
  GitAreaMemory,
  LogsAreaMemory,
  TlsAreaMemory
] as const
