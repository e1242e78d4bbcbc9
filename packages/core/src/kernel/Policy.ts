import { Context, Effect, Layer, Option } from "effect"
import { Forbidden, NotFound } from "../errors/Errors.ts"
import type { OrgRow } from "../orgs/Org.ts"
import { OrgStore } from "../orgs/OrgStore.ts"
import type { ProjectRow } from "../projects/Project.ts"
import type { Actor } from "./Actor.ts"
import { type AccessRead, EnvelopeStore } from "./EnvelopeStore.ts"
import { atLeast, type Role } from "./Role.ts"
import type { OrgRule, ProjectRule, Rule } from "./Rule.ts"
import type { OrgId, UserId } from "./Ids.ts"

export interface Membership {
  readonly org: OrgRow
  readonly role: Role
}

export interface ProjectAccess extends Membership {
  readonly project: ProjectRow
}

/**
 * An operation's rule already checked for this request (by the API, from the raw path, before the input was read):
 * the service that runs the operation with the same rule object takes the access it found instead of reading it again.
 */
export interface Granted {
  readonly rule: Rule
  readonly userId: UserId
  readonly orgSlug: string
  readonly projectName: string | undefined
  readonly access: Membership | ProjectAccess
}

export const CurrentGrant = Context.Reference<Granted | undefined>("@hostplane/core/kernel/CurrentGrant", {
  defaultValue: () => undefined
})

/**
 * The grant of this request for `rule` on this org (and project), if the API checked it. A grant for the same org and
 * project under another rule object means the endpoint and the service disagree on the operation's rule: a defect.
 */
const grantFor = (rule: Rule, actor: Actor, orgSlug: string, projectName: string | undefined) =>
  Effect.flatMap(Effect.service(CurrentGrant), (granted) => {
    if (
      granted === undefined ||
      granted.userId !== actor.userId ||
      granted.orgSlug !== orgSlug ||
      granted.projectName !== projectName
    ) {
      return Effect.succeed(undefined)
    }
    return granted.rule === rule
      ? Effect.succeed(granted.access)
      : Effect.die(new Error(`the endpoint's rule is not the rule its service authorizes with (${orgSlug})`))
  })

/** The one authorization rule: outsiders and foreign names get 404, a role below the minimum gets 403. */
export class Policy extends Context.Service<
  Policy,
  {
    readonly require: (actor: Actor, orgSlug: string, rule: OrgRule) => Effect.Effect<Membership, NotFound | Forbidden>
    /** The same rule for a project of the org: a project that does not exist (or is another org's) is 404. */
    readonly requireProject: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      rule: ProjectRule
    ) => Effect.Effect<ProjectAccess, NotFound | Forbidden>
    /**
     * The role check of an operation's rule (404, 403; not the project's delete state, which the operation checks
     * later), as the API runs it before reading the input; the service then finds it as `CurrentGrant`.
     */
    readonly grant: (
      actor: Actor,
      orgSlug: string,
      projectName: string | undefined,
      rule: Rule
    ) => Effect.Effect<Granted, NotFound | Forbidden>
    /**
     * For an org reached through a public name (a routed hostname) rather than its slug, so its existence is no
     * secret: no membership and a role below the minimum are both 403.
     */
    readonly requireOrgRole: (actor: Actor, orgId: OrgId, rule: OrgRule) => Effect.Effect<Membership, Forbidden>
    /**
     * `require` again for an org already authorized, on `read` as it now stands (taken under its lock, a concurrent
     * delete, removal or demotion has committed): gone or no longer a member is 404, a lower role 403.
     */
    readonly recheck: (
      read: AccessRead,
      granted: Membership,
      minimum: Role
    ) => Effect.Effect<Membership, NotFound | Forbidden>
  }
>()("@hostplane/core/kernel/Policy") {
  static readonly layer = Layer.effect(
    Policy,
    Effect.gen(function* () {
      const orgs = yield* OrgStore
      const envelope = yield* EnvelopeStore
      const memberOf = (read: AccessRead, orgSlug: string): Effect.Effect<Membership, NotFound> =>
        Option.isNone(read.org) || Option.isNone(read.role)
          ? Effect.fail(new NotFound({ message: `organization ${orgSlug} not found` }))
          : Effect.succeed({ org: read.org.value, role: read.role.value })
      const atLeastRole = (membership: Membership, minimum: Role) =>
        atLeast(membership.role, minimum)
          ? Effect.void
          : Effect.fail(new Forbidden({ message: `this needs the ${minimum} role or higher` }))

      // The rule runs on every authorized request: untraced, as a span and stack frame per call cost more than the
      // rule itself (measured in the write profile).
      const orgAccess = Effect.fnUntraced(function* (actor: Actor, orgSlug: string, minimum: Role) {
        const membership = yield* memberOf(yield* envelope.access(orgSlug, actor.userId), orgSlug)
        yield* atLeastRole(membership, minimum)
        return membership
      })

      const projectAccess = Effect.fnUntraced(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        minimum: Role
      ) {
        const read = yield* envelope.access(orgSlug, actor.userId, projectName)
        const membership = yield* memberOf(read, orgSlug)
        const project = read.project
        if (Option.isNone(project)) return yield* new NotFound({ message: `project ${projectName} not found` })
        yield* atLeastRole(membership, minimum)
        return { ...membership, project: project.value } satisfies ProjectAccess
      })

      const require = Effect.fnUntraced(function* (actor: Actor, orgSlug: string, rule: OrgRule) {
        const granted = yield* grantFor(rule, actor, orgSlug, undefined)
        if (granted !== undefined) return granted
        return yield* orgAccess(actor, orgSlug, rule.minimum)
      })

      const requireProject = Effect.fnUntraced(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        rule: ProjectRule
      ) {
        const granted = yield* grantFor(rule, actor, orgSlug, projectName)
        if (granted !== undefined) return granted as ProjectAccess
        return yield* projectAccess(actor, orgSlug, projectName, rule.minimum)
      })

      const requireOrgRole = Effect.fn("Policy.requireOrgRole")(function* (actor: Actor, orgId: OrgId, rule: OrgRule) {
        const minimum = rule.minimum
        const org = yield* orgs.findById(orgId)
        const role = Option.isSome(org) ? yield* orgs.findMembership(orgId, actor.userId) : Option.none()
        if (Option.isNone(org) || Option.isNone(role)) {
          return yield* new Forbidden({
            message: `this needs the ${minimum} role or higher in the owning organization`
          })
        }
        const membership = { org: org.value, role: role.value }
        yield* atLeastRole(membership, minimum)
        return membership
      })

      const recheck = Effect.fnUntraced(function* (read: AccessRead, granted: Membership, minimum: Role) {
        const membership = yield* memberOf(read, granted.org.slug)
        yield* atLeastRole(membership, minimum)
        return membership
      })

      const grant = Effect.fnUntraced(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string | undefined,
        rule: Rule
      ) {
        const access =
          projectName === undefined
            ? yield* orgAccess(actor, orgSlug, rule.minimum)
            : yield* projectAccess(actor, orgSlug, projectName, rule.minimum)
        return { rule, userId: actor.userId, orgSlug, projectName, access } satisfies Granted
      })

      return Policy.of({ require, requireProject, grant, requireOrgRole, recheck })
    })
  )
}
