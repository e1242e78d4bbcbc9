import { AccessAreaHttp } from "./access/AccessAreaHttp.ts"
import { AiAddonAreaHttp, AiAreaHttp } from "./ai/AiAreaHttp.ts"
import { BillingAreaHttp } from "./billing/BillingAreaHttp.ts"
import { DatabaseAreaHttp } from "./database/DatabaseAreaHttp.ts"
import { NodeAreaHttp } from "./node/NodeAreaHttp.ts"
import { DeploymentsAreaHttp } from "./deployments/DeploymentsAreaHttp.ts"
import { DnsAreaHttp } from "./dns/DnsAreaHttp.ts"
import { DomainsAreaHttp } from "./domains/DomainsAreaHttp.ts"
import { EmailAreaHttp } from "./email/EmailAreaHttp.ts"
import { EndUserAreaHttp } from "./enduser/EndUserAreaHttp.ts"
import { GitAreaHttp } from "./git/GitAreaHttp.ts"
import { HostnamesAreaHttp } from "./hostnames/HostnamesAreaHttp.ts"
import { IdentityAreaHttp } from "./identity/IdentityAreaHttp.ts"
import { LogsAreaHttp } from "./logs/LogsAreaHttp.ts"
import { OrgsAreaHttp } from "./orgs/OrgsAreaHttp.ts"
import { ProjectsAreaHttp } from "./projects/ProjectsAreaHttp.ts"
import { SecretsAreaHttp } from "./secrets/SecretsAreaHttp.ts"
import { StorageAreaHttp } from "./storage/StorageAreaHttp.ts"

/** Every area's `/v1` groups and handlers; the root API adds the groups in this order. */
export const areas = [
  IdentityAreaHttp,
  OrgsAreaHttp,
  ProjectsAreaHttp,
  DeploymentsAreaHttp,
  SecretsAreaHttp,
  AccessAreaHttp,
  HostnamesAreaHttp,
  BillingAreaHttp,
  DnsAreaHttp,
  DomainsAreaHttp,
  AiAreaHttp,
  EmailAreaHttp,
  AiAddonAreaHttp,
  EndUserAreaHttp,
  StorageAreaHttp,
  GitAreaHttp,
  DatabaseAreaHttp,
  NodeAreaHttp,
  LogsAreaHttp
] as const
