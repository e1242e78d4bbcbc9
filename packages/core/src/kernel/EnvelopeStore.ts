import { Context, Data, type Effect, Option } from "effect"
import type { OrgRow } from "../orgs/Org.ts"
import type { ProjectRow } from "../projects/Project.ts"
import type { AuditEvent } from "./Audit.ts"
import type { OrgId, ProjectId, UserId } from "./Ids.ts"
import { type Role } from "./Role.ts"

/** What an authorization rule depends on, read together: the org, the user's role in it, the project asked for. */
export interface AccessRead {
  readonly org: Option.Option<OrgRow>
  /** None when the user is no member (or the org is gone). */
  readonly role: Option.Option<Role>
  /** None when no project was asked for, or the org has no such project. */
  readonly project: Option.Option<ProjectRow>
}

/**
 * What a one-statement write checks under the org lock before it writes (`Mutation.projectStatement`): the user is
 * still a member with one of `roles`, the project is still there (in that org) and, with `refuseDeleting`, its delete is not
 * accepted. The store takes the lock, reads again, and writes nothing when a check fails (`EnvelopeRefused`).
 */
export interface Guard {
  readonly orgId: OrgId
  readonly userId: UserId
  readonly projectId: ProjectId
  /** The roles the rule accepts (`rolesFrom` its minimum). */
  readonly roles: ReadonlyArray<Role>
  readonly refuseDeleting: boolean
}

/** Whether `read`, made under the org lock, passes `guard`: the rule an adapter's guarded write applies. */
export const guardAllows = (guard: Guard, read: AccessRead): boolean =>
  Option.isSome(read.org) &&
  Option.isSome(read.role) &&
  guard.roles.includes(read.role.value) &&
  Option.isSome(read.project) &&
  read.project.value.id === guard.projectId &&
  read.project.value.orgId === guard.orgId &&
  !(guard.refuseDeleting && read.project.value.deletingSince !== null)

/**
 * A project write's envelope handed to its one store write (`Mutation.projectStatement`): the guard, the audit row
 * and the node revision raise (either may be absent). The store records all of it in one atomic step with its own
 * write, so no transaction is open and the org lock is held only while the database runs that one statement.
 */
export interface Finish {
  readonly guard: Guard
  readonly audit: AuditEvent | undefined
  readonly raise: ProjectId | undefined
}

/** A guarded write found a check failing under the lock and wrote nothing: what it read, for `Mutation` to name. */
export class EnvelopeRefused extends Data.TaggedError("EnvelopeRefused")<{ readonly read: AccessRead }> {}

/**
 * The round trips of every authorized write, fused: `Policy` reads the org, the role and the project in one, and
 * `Mutation` takes the org lock and then makes the same reads in one round trip (reads in a statement that waited for
 * the lock would still see its old snapshot, so an adapter must read after the lock is held), then records the audit
 * row and raises the node revision in one; or lets a change's one write take the lock, check and write in one
 * statement (`Finish`). The reads and writes
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
