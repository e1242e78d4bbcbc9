import { Context, Effect, Layer, Option } from "effect"
import { type Forbidden, NotFound, OpInFlight } from "../errors/Errors.ts"
import { OrgStore } from "../orgs/OrgStore.ts"
import type { ProjectRow } from "../projects/Project.ts"
import type { Actor } from "./Actor.ts"
import { type AuditAction, type AuditEvent, AuditLog } from "./Audit.ts"
import { type AccessRead, EnvelopeRefused, EnvelopeStore, type Finish } from "./EnvelopeStore.ts"
import { type Membership, Policy, type ProjectAccess } from "./Policy.ts"
import { type Role, rolesFrom } from "./Role.ts"
import type { OrgRule, ProjectRule } from "./Rule.ts"
import { nowIso } from "./Time.ts"
import { Transactor } from "./Transactor.ts"
import type { OrgId, ProjectId } from "./Ids.ts"
import { NodeChanges } from "./NodeChanges.ts"

/** What a change leaves in the audit log; the actor, the time and (unless given) the org come from the envelope. */
export interface AuditEntry {
  readonly action: AuditAction
  readonly target: string | null
  readonly data?: Record<string, unknown>
  /** Only for a write that makes its org (`org.create`): the envelope has no org to take it from. */
  readonly orgId?: OrgId
}

/**
 * A change's answer, the audit row it commits with (none for a write the audit log leaves out), and whether it
 * changed anything: only a change raises the node revision of a `{ node: true }` write.
 */
export interface Audited<A> {
  readonly result: A
  readonly audit: AuditEntry | undefined
  readonly changed: boolean
}

export const audited = <A>(result: A, audit: AuditEntry): Audited<A> => ({ result, audit, changed: true })

/** A write that changed nothing (a repeat), or an outcome that is neither audited nor applied by a node. */
export const unaudited = <A>(result: A): Audited<A> => ({ result, audit: undefined, changed: false })

/** A change spec part 6 lists no audit event for (the database grant): no audit row, but it raises the revision. */
export const unlisted = <A>(result: A): Audited<A> => ({ result, audit: undefined, changed: true })

/** How a project write treats the node revision. */
export interface ProjectWriteOptions {
  /** The write changes what a node applies (decisions.md part 6): a change raises the project's node revision. */
  readonly node?: boolean
}

/** An org write authorized before its transaction: who, the org as then read, and the role the rule needs. */
export interface OrgGrant extends Membership {
  readonly actor: Actor
  readonly minimum: Role
}

/** A project write authorized before its transaction; `deleting: "allow"` lets the change see a project being deleted. */
export interface ProjectGrant extends ProjectAccess {
  readonly actor: Actor
  readonly minimum: Role
  readonly deleting: "refuse" | "allow"
}

/** What a change sees: the org (and project) read again under the org lock, and the time of the write. */
export interface OrgWrite extends Membership {
  readonly at: string
}

export interface ProjectWrite extends ProjectAccess {
  readonly at: string
}

/** What a one-statement change sees (`Mutation.projectStatement`): the project as authorized, and the time. */
export interface ProjectStatementWrite {
  readonly project: ProjectRow
  readonly at: string
  /**
   * The envelope for the change's one store write: the guard, the audit row of `entry` (none when undefined) and,
   * for a `{ node: true }` write, the revision raise.
   */
  readonly finish: (entry: AuditEntry | undefined) => Finish
}

const refuseDeleting = (project: ProjectRow) =>
  project.deletingSince === null
    ? Effect.void
    : Effect.fail(new OpInFlight({ message: `project ${project.name} is being deleted` }))

/**
 * The one write envelope: authorize, then in one transaction take the org lock, read again what the rule depends on
 * (membership and role, the project, refusing one being deleted with 409 `op_in_flight`), run the change and commit
 * its audit row with it. Slow work that must not hold the lock (sealing, hashing, streaming a bundle) runs between
 * `authorize*` and the write; the envelope then checks again under the lock.
 */
export class Mutation extends Context.Service<
  Mutation,
  {
    readonly authorizeOrg: (
      actor: Actor,
      orgSlug: string,
      rule: OrgRule
    ) => Effect.Effect<OrgGrant, NotFound | Forbidden>
    /**
     * Refuses a project being deleted at once (409 `op_in_flight`) unless the rule's `deleting` is `allow` (the change
     * sees it) or `atWrite`: then the write refuses it under the lock, after the caller checked its input
     * (decisions.md part 12: 400 before 409).
     */
    readonly authorizeProject: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      rule: ProjectRule
    ) => Effect.Effect<ProjectGrant, NotFound | Forbidden | OpInFlight>
    /** Org lock, the caller's membership read again (404 gone, 403 demoted), the change, its audit row. */
    readonly org: <A, E, R>(
      grant: OrgGrant,
      change: (write: OrgWrite) => Effect.Effect<Audited<A>, E, R>
    ) => Effect.Effect<A, E | NotFound | Forbidden, R>
    /**
     * As `org`, and the project read again: 404 when it is gone, 409 `op_in_flight` once its delete is accepted. With
     * `{ node: true }` a change (`audited`, `unlisted`) raises the project's node revision in the same transaction.
     */
    readonly project: <A, E, R>(
      grant: ProjectGrant,
      change: (write: ProjectWrite) => Effect.Effect<Audited<A>, E, R>,
      options?: ProjectWriteOptions
    ) => Effect.Effect<A, E | NotFound | Forbidden | OpInFlight, R>
    /**
     * As `project`, for a change that is one store write: it hands the write the envelope (`Finish`), and the store
     * takes the org lock, checks the rule again, writes, records the audit row and raises the revision in one
     * atomic statement, outside any transaction, so the lock is held only while the database runs it. A store's
     * `EnvelopeRefused` becomes the refusal `project` would answer (404, 403 or 409 `op_in_flight`).
     */
    readonly projectStatement: <A, E, R>(
      grant: ProjectGrant,
      change: (write: ProjectStatementWrite) => Effect.Effect<A, E | EnvelopeRefused, R>,
      options?: ProjectWriteOptions
    ) => Effect.Effect<A, Exclude<E, EnvelopeRefused> | NotFound | Forbidden | OpInFlight, R>
    /** Org lock, the change, its audit row: for a write authorized otherwise than by a role (an invite token). */
    readonly lockedOrg: <A, E, R>(
      actor: Actor,
      orgId: OrgId,
      change: (at: string) => Effect.Effect<Audited<A>, E, R>
    ) => Effect.Effect<A, E, R>
    /** The audit rows of one target in an org, oldest first: a resource's history as the envelope recorded it. */
    readonly history: (orgId: OrgId, target: string) => Effect.Effect<ReadonlyArray<AuditEvent>>
    /** The change and its audit row in one transaction, with no org to lock: an org's creation. */
    readonly unlocked: <A, E, R>(
      actor: Actor,
      change: (at: string) => Effect.Effect<Audited<A>, E, R>
    ) => Effect.Effect<A, E, R>
  }
>()("@hostplane/core/kernel/Mutation") {
  static readonly layer = Layer.effect(
    Mutation,
    Effect.gen(function* () {
      const tx = yield* Transactor
      const audit = yield* AuditLog
      const orgs = yield* OrgStore
      const policy = yield* Policy
      const envelope = yield* EnvelopeStore
      const nodeChanges = yield* NodeChanges

      const eventOf = (actor: Actor, orgId: OrgId | null, at: string, entry: AuditEntry): AuditEvent => ({
        action: entry.action,
        orgId: entry.orgId ?? orgId,
        actorId: actor.userId,
        target: entry.target,
        data: entry.data ?? {},
        at
      })

      /** Runs the change and records its audit row; the caller provides the transaction. */
      const commit = <A, E, R>(
        actor: Actor,
        orgId: OrgId | null,
        change: (at: string) => Effect.Effect<Audited<A>, E, R>,
        raise?: ProjectId
      ): Effect.Effect<A, E, R> =>
        Effect.gen(function* () {
          const at = yield* nowIso
          const outcome = yield* change(at)
          const event = outcome.audit === undefined ? undefined : eventOf(actor, orgId, at, outcome.audit)
          const raised = outcome.changed ? raise : undefined
          // Last in the transaction, so the revision counter is held only until the commit.
          if (event !== undefined || raised !== undefined) yield* envelope.finish(event, raised)
          return outcome.result
        })

      // Every write passes here: untraced, as a span and stack frame per call cost more than the envelope's own work
      // (measured in the write profile); the statements keep their own spans.
      const authorizeOrg = Effect.fnUntraced(function* (actor: Actor, orgSlug: string, rule: OrgRule) {
        const membership = yield* policy.require(actor, orgSlug, rule)
        return { ...membership, actor, minimum: rule.minimum } satisfies OrgGrant
      })

      const authorizeProject = Effect.fnUntraced(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        rule: ProjectRule
      ) {
        const access = yield* policy.requireProject(actor, orgSlug, projectName, rule)
        if (rule.deleting === "refuse") yield* refuseDeleting(access.project)
        return {
          ...access,
          actor,
          minimum: rule.minimum,
          deleting: rule.deleting === "allow" ? "allow" : "refuse"
        } satisfies ProjectGrant
      })

      const org = Effect.fnUntraced(function* <A, E, R>(
        grant: OrgGrant,
        change: (write: OrgWrite) => Effect.Effect<Audited<A>, E, R>
      ) {
        return yield* tx.withTransaction(
          Effect.gen(function* () {
            const locked = yield* envelope.lock(grant.org.id, grant.actor.userId)
            const membership = yield* policy.recheck(locked, grant, grant.minimum)
            return yield* commit(grant.actor, grant.org.id, (at) => change({ ...membership, at }))
          })
        )
      })

      /**
       * The project rule again on what was read under the org lock: the membership and role (404, 403), the project
       * still there (404) and, unless the grant allows it, not being deleted (409 `op_in_flight`).
       */
      const recheckProject = (grant: ProjectGrant, read: AccessRead) =>
        Effect.gen(function* () {
          const membership = yield* policy.recheck(read, grant, grant.minimum)
          if (Option.isNone(read.project) || read.project.value.id !== grant.project.id) {
            return yield* new NotFound({ message: `project ${grant.project.name} not found` })
          }
          if (grant.deleting === "refuse") yield* refuseDeleting(read.project.value)
          return { membership, project: read.project.value }
        })

      const project = Effect.fnUntraced(function* <A, E, R>(
        grant: ProjectGrant,
        change: (write: ProjectWrite) => Effect.Effect<Audited<A>, E, R>,
        options: ProjectWriteOptions = {}
      ) {
        const result = yield* tx.withTransaction(
          Effect.gen(function* () {
            const locked = yield* envelope.lock(grant.org.id, grant.actor.userId, grant.project.id)
            const { membership, project } = yield* recheckProject(grant, locked)
            return yield* commit(
              grant.actor,
              grant.org.id,
              (at) => change({ ...membership, project, at }),
              options.node === true ? project.id : undefined
            )
          })
        )
        if (options.node === true) yield* nodeChanges.changed(grant.project.id)
        return result
      })

      /** The refusal `project` answers for what a guarded write read under the lock; a read that passes is a defect. */
      const refusal = (grant: ProjectGrant, read: AccessRead) =>
        Effect.andThen(
          recheckProject(grant, read),
          Effect.die(new Error("Mutation: a store's guard refused a write the rules allow"))
        )

      const projectStatement = <A, E, R>(
        grant: ProjectGrant,
        change: (write: ProjectStatementWrite) => Effect.Effect<A, E | EnvelopeRefused, R>,
        options: ProjectWriteOptions = {}
      ): Effect.Effect<A, Exclude<E, EnvelopeRefused> | NotFound | Forbidden | OpInFlight, R> =>
        Effect.flatMap(nowIso, (at) => {
          const guard = {
            orgId: grant.org.id,
            userId: grant.actor.userId,
            projectId: grant.project.id,
            roles: rolesFrom(grant.minimum),
            refuseDeleting: grant.deleting === "refuse"
          }
          const finish = (entry: AuditEntry | undefined): Finish => ({
            guard,
            audit: entry === undefined ? undefined : eventOf(grant.actor, grant.org.id, at, entry),
            raise: options.node === true ? grant.project.id : undefined
          })
          const written = change({ project: grant.project, at, finish })
          return options.node === true ? Effect.tap(written, () => nodeChanges.changed(grant.project.id)) : written
        }).pipe(
          Effect.catchIf(
            (error): error is EnvelopeRefused => error instanceof EnvelopeRefused,
            (refused) => refusal(grant, refused.read)
          )
        ) as Effect.Effect<A, Exclude<E, EnvelopeRefused> | NotFound | Forbidden | OpInFlight, R>

      const lockedOrg = Effect.fnUntraced(function* <A, E, R>(
        actor: Actor,
        orgId: OrgId,
        change: (at: string) => Effect.Effect<Audited<A>, E, R>
      ) {
        return yield* tx.withTransaction(Effect.andThen(orgs.lock(orgId), commit(actor, orgId, change)))
      })

      const unlocked = Effect.fnUntraced(function* <A, E, R>(
        actor: Actor,
        change: (at: string) => Effect.Effect<Audited<A>, E, R>
      ) {
        return yield* tx.withTransaction(commit(actor, null, change))
      })

      const history = (orgId: OrgId, target: string) =>
        Effect.map(audit.list({ orgId }), (events) => events.filter((event) => event.target === target))

      return Mutation.of({
        authorizeOrg,
        authorizeProject,
        org,
        project,
        projectStatement,
        lockedOrg,
        unlocked,
        history
      })
    })
  )
}
