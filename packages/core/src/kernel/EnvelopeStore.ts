import { Context, type Effect, type Option } from "effect"
import type { OrgRow } from "../orgs/Org.ts"
import type { ProjectRow } from "../projects/Project.ts"
import type { AuditEvent } from "./Audit.ts"
import type { OrgId, ProjectId, UserId } from "./Ids.ts"
import type { Role } from "./Role.ts"

/** What an authorization rule depends on, read together: the org, the user's role in it, the project asked for. */
export interface AccessRead {
  readonly org: Option.Option<OrgRow>
  /** None when the user is no member (or the org is gone). */
  readonly role: Option.Option<Role>
  /** None when no project was asked for, or the org has no such project. */
  readonly project: Option.Option<ProjectRow>
}

/**
 * The last writes of a project write's envelope, the audit row and the node revision raise (either may be absent),
 * handed to the change's own store write to record in the same statement: one round trip less under the org lock.
 * Built by `Mutation` (`ProjectWrite.finish`); the change that passed it to its store answers `carried(result, finish)`.
 */
export interface Finish {
  readonly audit: AuditEvent | undefined
  readonly raise: ProjectId | undefined
}

/**
 * The round trips of every authorized write, fused: `Policy` reads the org, the role and the project in one, and
 * `Mutation` takes the org lock and then makes the same reads in one round trip (reads in a statement that waited for
 * the lock would still see its old snapshot, so an adapter must read after the lock is held), then records the audit
 * row and raises the node revision in one (or lets the change's own write carry them: `Finish`). The reads and writes
 * are those of `OrgStore`, `ProjectStore`, the audit log and `NodeRevisions`, on the same tables; under load each round trip inside the org lock costs every writer of the org waiting behind it.
 */
export class EnvelopeStore extends Context.Service<
  EnvelopeStore,
  {
    /** The org by slug, the user's role in it and, when `projectName` is given, the org's project of that name. */
    readonly access: (orgSlug: string, userId: UserId, projectName?: string) => Effect.Effect<AccessRead>
    /**
     * Takes the org lock (`OrgStore.lock`: held until the transaction ends) and reads under it the org, the user's
     * role and, when `projectId` is given, that project of the org. Call inside a transaction.
     */
    readonly lock: (orgId: OrgId, userId: UserId, projectId?: ProjectId) => Effect.Effect<AccessRead>
    /**
     * Records the audit row (as the audit log's `record`) and raises the project's node revision (`NodeRevisions.raise`), either
     * or both, as the last write of the transaction: the counter stays held only until the commit.
     */
    readonly finish: (audit: AuditEvent | undefined, raise: ProjectId | undefined) => Effect.Effect<void>
  }
>()("@hostplane/core/kernel/EnvelopeStore") {}
