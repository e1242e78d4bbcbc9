import { Context, Effect, Layer, Option } from "effect"
import { type Forbidden, NotFound, OpInFlight } from "../errors/Errors.ts"
import { OrgStore } from "../orgs/OrgStore.ts"
import type { ProjectRow } from "../projects/Project.ts"
import type { Actor } from "./Actor.ts"
import { type AuditAction, type AuditEvent, AuditLog } from "./Audit.ts"
import { EnvelopeStore, type Finish } from "./EnvelopeStore.ts"
import { type Membership, Policy, type ProjectAccess } from "./Policy.ts"
import type { Role } from "./Role.ts"
import { nowIso } from "./Time.ts"
import { Transactor } from "./Transactor.ts"
import type { OrgId, ProjectId } from "./Ids.ts"

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
  /** The envelope's `Finish` that the change's own store write recorded (`carried`): the envelope writes nothing more. */
  readonly carried?: Finish
}

export const audited = <A>(result: A, audit: AuditEntry): Audited<A> => ({ result, audit, changed: true })

/** A write that changed nothing (a repeat), or an outcome that is neither audited nor applied by a node. */
export const unaudited = <A>(result: A): Audited<A> => ({ result, audit: undefined, changed: false })

/**
 * A change whose store write recorded the envelope's last writes itself: `finish` is what `ProjectWrite.finish` gave
 * the change, passed to that write. It counts as a change (the revision raise of a `{ node: true }` write is in it).
 */
export const carried = <A>(result: A, finish: Finish): Audited<A> => ({
  result,
  audit: undefined,
  changed: true,
  carried: finish
})

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
  /**
   * For a change that is one store write audited as `entry`: the envelope's audit row and (for a `{ node: true }`
   * write) revision raise, for that write to record in its own statement, one round trip less under the org lock.
   * The change then answers `carried(result, finish)`, and the envelope checks that it got back the finish it gave.
   */
  readonly finish: (entry: AuditEntry) => Finish
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
      minimum: Role
    ) => Effect.Effect<OrgGrant, NotFound | Forbidden>
    /** Refuses a project being deleted at once (409 `op_in_flight`) unless `deleting` is `allow`. */
    readonly authorizeProject: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      minimum: Role,
      options?: { readonly deleting?: "refuse" | "allow" }
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

      /**
       * Runs the change and records its audit row; the caller provides the transaction. A change that took `finish`
       * must answer `carried` with it: its store write recorded the audit row and the raise, so nothing is left here.
       */
      const commit = <A, E, R>(
        actor: Actor,
        orgId: OrgId | null,
        change: (at: string, finish: (entry: AuditEntry) => Finish) => Effect.Effect<Audited<A>, E, R>,
        raise?: ProjectId
      ): Effect.Effect<A, E, R> =>
        Effect.gen(function* () {
          const at = yield* nowIso
          const eventOf = (entry: AuditEntry): AuditEvent => ({
            action: entry.action,
            orgId: entry.orgId ?? orgId,
            actorId: actor.userId,
            target: entry.target,
            data: entry.data ?? {},
            at
          })
          let issued: Finish | undefined
          const outcome = yield* change(at, (entry) => (issued = { audit: eventOf(entry), raise }))
          if (issued !== undefined || outcome.carried !== undefined) {
            if (outcome.carried !== issued) {
              return yield* Effect.die(new Error("Mutation: a change took the envelope's finish but did not carry it"))
            }
            return outcome.result
          }
          const event = outcome.audit === undefined ? undefined : eventOf(outcome.audit)
          const raised = outcome.changed ? raise : undefined
          // Last in the transaction, so the revision counter is held only until the commit.
          if (event !== undefined || raised !== undefined) yield* envelope.finish(event, raised)
          return outcome.result
        })

      // Every write passes here: untraced, as a span and stack frame per call cost more than the envelope's own work
      // (issue 13's write profile); the statements keep their own spans.
      const authorizeOrg = Effect.fnUntraced(function* (actor: Actor, orgSlug: string, minimum: Role) {
        const membership = yield* policy.require(actor, orgSlug, minimum)
        return { ...membership, actor, minimum } satisfies OrgGrant
      })

      const authorizeProject = Effect.fnUntraced(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        minimum: Role,
        options: { readonly deleting?: "refuse" | "allow" } = {}
      ) {
        const access = yield* policy.requireProject(actor, orgSlug, projectName, minimum)
        const deleting = options.deleting ?? "refuse"
        if (deleting === "refuse") yield* refuseDeleting(access.project)
        return { ...access, actor, minimum, deleting } satisfies ProjectGrant
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

      const project = Effect.fnUntraced(function* <A, E, R>(
        grant: ProjectGrant,
        change: (write: ProjectWrite) => Effect.Effect<Audited<A>, E, R>,
        options: ProjectWriteOptions = {}
      ) {
        return yield* tx.withTransaction(
          Effect.gen(function* () {
            const locked = yield* envelope.lock(grant.org.id, grant.actor.userId, grant.project.id)
            const membership = yield* policy.recheck(locked, grant, grant.minimum)
            const current = locked.project
            if (Option.isNone(current)) {
              return yield* new NotFound({ message: `project ${grant.project.name} not found` })
            }
            if (grant.deleting === "refuse") yield* refuseDeleting(current.value)
            return yield* commit(
              grant.actor,
              grant.org.id,
              (at, finish) => change({ ...membership, project: current.value, at, finish }),
              options.node === true ? current.value.id : undefined
            )
          })
        )
      })

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

      return Mutation.of({ authorizeOrg, authorizeProject, org, project, lockedOrg, unlocked, history })
    })
  )
}
