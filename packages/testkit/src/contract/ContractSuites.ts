import type { Layer } from "effect"
import type { Stores } from "../Stores.ts"
import { accessStoreSuite } from "./AccessStoreSuite.ts"
import { auditLogSuite } from "./AuditLogSuite.ts"
import { deploymentStoreSuite } from "./DeploymentStoreSuite.ts"
import { edgeSessionStoreSuite } from "./EdgeSessionStoreSuite.ts"
import { hostnameStoreSuite } from "./HostnameStoreSuite.ts"
import { idempotencyStoreSuite } from "./IdempotencyStoreSuite.ts"
import { jobStoreSuite } from "./JobStoreSuite.ts"
import { mailOutboxSuite } from "./MailOutboxSuite.ts"
import { orgStoreSuite } from "./OrgStoreSuite.ts"
import { projectStoreSuite } from "./ProjectStoreSuite.ts"
import { secretStoreSuite } from "./SecretStoreSuite.ts"
import { transactorSuite } from "./TransactorSuite.ts"
import { userStoreSuite } from "./UserStoreSuite.ts"

/** Every store port contract against one adapter family; `name` prefixes each suite (`memory`, `postgres`). */
export const contractSuites = <E>(name: string, stores: Layer.Layer<Stores, E>): void => {
  userStoreSuite(name, stores)
  orgStoreSuite(name, stores)
  mailOutboxSuite(name, stores)
  auditLogSuite(name, stores)
  transactorSuite(name, stores)
  secretStoreSuite(name, stores)
  accessStoreSuite(name, stores)
  hostnameStoreSuite(name, stores)
  idempotencyStoreSuite(name, stores)
  projectStoreSuite(name, stores)
  deploymentStoreSuite(name, stores)
  edgeSessionStoreSuite(name, stores)
  jobStoreSuite(name, stores)
}
