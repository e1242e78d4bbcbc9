import { Layer } from "effect"
import type { Stores } from "../Stores.ts"
import * as AccessStoreMemory from "./AccessStoreMemory.ts"
import * as AuditLogMemory from "./AuditLogMemory.ts"
import * as DeploymentStoreMemory from "./DeploymentStoreMemory.ts"
import * as EdgeSessionStoreMemory from "./EdgeSessionStoreMemory.ts"
import * as HostnameStoreMemory from "./HostnameStoreMemory.ts"
import * as IdempotencyStoreMemory from "./IdempotencyStoreMemory.ts"
import * as MailOutboxMemory from "./MailOutboxMemory.ts"
import { MemoryState } from "./MemoryState.ts"
import * as JobStoreMemory from "./JobStoreMemory.ts"
import * as OrgStoreMemory from "./OrgStoreMemory.ts"
import * as ProjectStoreMemory from "./ProjectStoreMemory.ts"
import * as SecretStoreMemory from "./SecretStoreMemory.ts"
import * as TransactorMemory from "./TransactorMemory.ts"
import * as UserStoreMemory from "./UserStoreMemory.ts"

/** Every store port on one fresh in-memory state; for tests and examples, never a running server's default. */
export const layerMemory: Layer.Layer<Stores> = Layer.mergeAll(
  UserStoreMemory.layer,
  OrgStoreMemory.layer,
  MailOutboxMemory.layer,
  AuditLogMemory.layer,
  TransactorMemory.layer,
  ProjectStoreMemory.layer,
  JobStoreMemory.layer,
  DeploymentStoreMemory.layer,
  EdgeSessionStoreMemory.layer,
  SecretStoreMemory.layer,
  AccessStoreMemory.layer,
  HostnameStoreMemory.layer,
  IdempotencyStoreMemory.layer
).pipe(Layer.provide(MemoryState.layer))
