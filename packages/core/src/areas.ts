import { AccessArea } from "./access/AccessArea.ts"
import { AddonsArea } from "./addons/AddonsArea.ts"
import { AiArea } from "./ai/AiArea.ts"
import { BillingArea } from "./billing/BillingArea.ts"
import { DatabaseArea } from "./database/DatabaseArea.ts"
import { DeploymentsArea } from "./deployments/DeploymentsArea.ts"
import { DomainsArea } from "./domains/DomainsArea.ts"
import { DnsArea } from "./dns/DnsArea.ts"
import { EmailArea } from "./email/EmailArea.ts"
import { EdgeArea } from "./edge/EdgeArea.ts"
import { EndUserArea } from "./enduser/EndUserArea.ts"
import { GitArea } from "./git/GitArea.ts"
import { IdempotencyArea } from "./idempotency/IdempotencyArea.ts"
import { HostnamesArea } from "./hostnames/HostnamesArea.ts"
import { JobsArea } from "./jobs/JobsArea.ts"
import { IdentityArea } from "./identity/IdentityArea.ts"
import { KernelArea } from "./kernel/KernelArea.ts"
import { LogsArea } from "./logs/LogsArea.ts"
import { MailArea } from "./mail/MailArea.ts"
import { OrgsArea } from "./orgs/OrgsArea.ts"
import { ProjectsArea } from "./projects/ProjectsArea.ts"
import { SecretsArea } from "./secrets/SecretsArea.ts"
import { StorageArea } from "./storage/StorageArea.ts"
import { TlsArea } from "./tls/TlsArea.ts"

/** Every area of core, in dependency order: an area may use the services of the areas before it. */
export const areas = [
  KernelArea,
  JobsArea,
  MailArea,
  OrgsArea,
  IdentityArea,
  ProjectsArea,
  DeploymentsArea,
  SecretsArea,
  AccessArea,
  HostnamesArea,
  DnsArea,
  DatabaseArea,
  EndUserArea,
  EdgeArea,
  IdempotencyArea,
  DomainsArea,
  BillingArea,
  AddonsArea,
  AiArea,
  EmailArea,
  StorageArea,
  GitArea,
  LogsArea,
  TlsArea
] as const
