import { Effect, Layer } from "effect"
import { Edge } from "./edge/Edge.ts"
import type { EdgeSessionStore } from "./edge/EdgeSessionStore.ts"
import { AccessPolicies } from "./access/AccessPolicies.ts"
import type { AccessStore } from "./access/AccessStore.ts"
import { Deployments } from "./deployments/Deployments.ts"
import type { DeploymentStore } from "./deployments/DeploymentStore.ts"
import { Hostnames } from "./hostnames/Hostnames.ts"
import type { HostnameStore } from "./hostnames/HostnameStore.ts"
import { Idempotency } from "./idempotency/Idempotency.ts"
import type { IdempotencyStore } from "./idempotency/IdempotencyStore.ts"
import type { UserStore } from "./identity/UserStore.ts"
import { Identity } from "./identity/Identity.ts"
import type { AuditLog } from "./kernel/Audit.ts"
import { Mutation } from "./kernel/Mutation.ts"
import { Policy } from "./kernel/Policy.ts"
import { Tokens } from "./kernel/Tokens.ts"
import type { Transactor } from "./kernel/Transactor.ts"
import type { MailOutbox } from "./mail/Mail.ts"
import { JobHandlers } from "./jobs/JobRunner.ts"
import { Jobs } from "./jobs/Jobs.ts"
import type { JobStore } from "./jobs/JobStore.ts"
import { sendMailHandler } from "./mail/SendMail.ts"
import { hostnameCheckHandler } from "./hostnames/HostnameCheck.ts"
import { Invites } from "./orgs/Invites.ts"
import { Members } from "./orgs/Members.ts"
import { Notifications } from "./orgs/Notifications.ts"
import { OrgHoldings } from "./orgs/OrgHooks.ts"
import { Orgs } from "./orgs/Orgs.ts"
import type { OrgStore } from "./orgs/OrgStore.ts"
import { projectDeleteHandler, projectHoldings, Projects } from "./projects/Projects.ts"
import type { ProjectStore } from "./projects/ProjectStore.ts"
import { Secrets } from "./secrets/Secrets.ts"
import type { SecretStore } from "./secrets/SecretStore.ts"

/** The store ports one adapter family (PostgreSQL, memory) provides, all sharing one transaction. */
export type Stores =
  | UserStore
  | OrgStore
  | MailOutbox
  | AuditLog
  | Transactor
  | ProjectStore
  | JobStore
  | DeploymentStore
  | SecretStore
  | AccessStore
  | HostnameStore
  | EdgeSessionStore
  | IdempotencyStore

/** Core's own hooks, added to whatever the host registered: project holdings. */
export const hooks = Layer.effect(
  OrgHoldings,
  Effect.gen(function* () {
    return [...(yield* OrgHoldings), yield* projectHoldings]
  })
)

/**
 * Every job kind core runs, for a `JobRunner`: mail sends (they need a `MailTransport`), hostname checks (a
 * `DnsResolver` and `HostedZones`) and project deletes. The area registry's `jobs` field replaces this list.
 */
export const jobHandlers = JobHandlers.layer([sendMailHandler(), hostnameCheckHandler, projectDeleteHandler])

/**
 * Every core service, with its ports left open: a host provides the `Stores`, `Settings`, and optionally an
 * `IdentityProvider`; hostname verification needs a `DnsResolver` and `HostedZones`, bundle uploads a
 * `BundleReader`, the edge an `ArtifactStore`. The output also carries the hooks, so runners built beside it see every handler.
 */
const areaServices = Layer.mergeAll(
  Members.layer,
  Invites.layer,
  Notifications.layer,
  Identity.layer,
  Projects.layer,
  Deployments.layer,
  Secrets.layer,
  AccessPolicies.layer,
  Hostnames.layer,
  Idempotency.layer
).pipe(
  Layer.provideMerge(Orgs.layer),
  Layer.provideMerge(Mutation.layer),
  Layer.provideMerge(Jobs.layer),
  Layer.provideMerge(Policy.layer),
  Layer.provideMerge(Tokens.layerDefault),
  Layer.provideMerge(hooks)
)

/** The edge's rules need the hostname and access services, so they are built on top of the others. */
export const services = Edge.layer.pipe(Layer.provideMerge(areaServices))
