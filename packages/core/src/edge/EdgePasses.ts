import { Context, Duration, Effect, Layer, Option, Schema } from "effect"
import { AccessPolicies } from "../access/AccessPolicies.ts"
import { admitsRole } from "../access/AccessPolicy.ts"
import { Forbidden, NotFound } from "../errors/Errors.ts"
import { makeId, type OrgId, type ProjectId, type UserId } from "../kernel/Ids.ts"
import { isoAfter, nowIso } from "../kernel/Time.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { OrgStore } from "../orgs/OrgStore.ts"
import { ProjectStore } from "../projects/ProjectStore.ts"
import { EdgeSessionStore } from "./EdgeSessionStore.ts"

/** How long a pass from an authorize code or the shared password lasts. */
export const edgePassTtl = Duration.hours(12)

/** A pass just issued: the cookie's value (shown once, only its SHA-256 is kept) and its lifetime in seconds. */
export interface EdgePass {
  readonly value: string
  readonly maxAge: number
}

/** What a visitor presented at a protected deployment's host: the bypass header and the pass cookie, if any. */
export interface PassPresented {
  readonly host: string
  readonly bypass?: string | undefined
  readonly pass?: string | undefined
}

// The longest value a node may present: real codes, secrets and passes are 43 characters, a password at most 200.
const presented = Schema.String.check(Schema.isMaxLength(256))
const host = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(253))

/** `POST /v1/node/access/check`: whether the bypass header or the pass cookie admits the visitor today. */
export const NodeAccessCheck = Schema.Struct({
  projectId: Schema.String,
  host,
  bypass: Schema.optionalKey(presented),
  pass: Schema.optionalKey(presented)
})
export type NodeAccessCheck = typeof NodeAccessCheck.Type

export const NodeAccessChecked = Schema.Struct({ admitted: Schema.Boolean })
export type NodeAccessChecked = typeof NodeAccessChecked.Type

/** `POST /v1/node/access/code`: a one-time authorize code brought to the host it was issued for. */
export const NodeAccessCode = Schema.Struct({ host, code: presented })
export type NodeAccessCode = typeof NodeAccessCode.Type

/** `POST /v1/node/access/password`: the shared password posted at one of the project's hosts. */
export const NodeAccessPassword = Schema.Struct({
  projectId: Schema.String,
  host,
  password: Schema.String.check(Schema.isMaxLength(1000))
})
export type NodeAccessPassword = typeof NodeAccessPassword.Type

/** A pass issued to a node for its visitor (`pass` null: the password is not right). Never logged, never cached. */
export const NodePass = Schema.Struct({ pass: Schema.NullOr(Schema.String), maxAge: Schema.Int })
export type NodePass = typeof NodePass.Type

/**
 * The passes of protected deployments (spec 4.11), one implementation for every edge: the control plane's own runs it
 * in process, a node on another machine through the node API (`/v1/node/access/*`). A pass is a random cookie value
 * whose SHA-256 is stored with its host and project, from a one-time authorize code (an org member; the role is read
 * again on every request) or from the shared password (its generation: a new password ends the old passes).
 */
export class EdgePasses extends Context.Service<
  EdgePasses,
  {
    /** Whether the bypass header or the visitor's pass admits them under `mode` today. */
    readonly admits: (
      presented: PassPresented,
      projectId: ProjectId,
      orgId: OrgId,
      mode: string
    ) => Effect.Effect<boolean>
    /** `admits` for a project named by id alone, under its policy now; unknown or deleted: 404. */
    readonly check: (input: NodeAccessCheck) => Effect.Effect<boolean, NotFound>
    /** An authorize code exchanged for a member's pass; 403 when the code is unknown, used or expired, or not a member. */
    readonly exchange: (host: string, code: string) => Effect.Effect<EdgePass, Forbidden>
    /** A pass when `password` is the project's shared password (none when it is not). */
    readonly password: (host: string, projectId: ProjectId, password: string) => Effect.Effect<Option.Option<EdgePass>>
    /** `password` for a project named by id alone; unknown or deleted: 404. */
    readonly passwordOf: (input: NodeAccessPassword) => Effect.Effect<Option.Option<EdgePass>, NotFound>
  }
>()("@hostplane/core/edge/EdgePasses") {
  static readonly layer = Layer.effect(
    EdgePasses,
    Effect.gen(function* () {
      const access = yield* AccessPolicies
      const sessions = yield* EdgeSessionStore
      const orgs = yield* OrgStore
      const projects = yield* ProjectStore
      const tokens = yield* Tokens

      const issue = Effect.fnUntraced(function* (
        host: string,
        projectId: ProjectId,
        holder: { readonly userId: UserId } | { readonly passwordGeneration: number }
      ) {
        const value = yield* tokens.secret(32)
        yield* sessions.insert({
          tokenHash: yield* tokens.hash(value),
          host,
          projectId,
          userId: "userId" in holder ? holder.userId : null,
          passwordGeneration: "passwordGeneration" in holder ? holder.passwordGeneration : null,
          expiresAt: yield* isoAfter(edgePassTtl),
          createdAt: yield* nowIso
        })
        return { value, maxAge: Math.floor(Duration.toSeconds(edgePassTtl)) } satisfies EdgePass
      })

      /** Whether the visitor's pass still admits them: an org pass needs the member role today, not only when issued. */
      const passAdmits = Effect.fnUntraced(function* (
        presented: PassPresented,
        projectId: ProjectId,
        orgId: OrgId,
        mode: string
      ) {
        if (presented.pass === undefined || presented.pass === "") return false
        const pass = yield* sessions.find(yield* tokens.hash(presented.pass), presented.host, yield* nowIso)
        if (Option.isNone(pass) || pass.value.projectId !== projectId) return false
        // A new password ends the passes earned with the old one.
        if (mode === "password") {
          return (
            pass.value.userId === null &&
            pass.value.passwordGeneration === (yield* access.passwordGeneration(projectId))
          )
        }
        if (pass.value.userId === null) return false
        const role = yield* orgs.findMembership(orgId, pass.value.userId)
        return Option.isSome(role) && admitsRole("org", role.value)
      })

      const admits = Effect.fn("EdgePasses.admits")(function* (
        presented: PassPresented,
        projectId: ProjectId,
        orgId: OrgId,
        mode: string
      ) {
        if (presented.bypass !== undefined && (yield* access.checkBypass(projectId, presented.bypass))) return true
        return yield* passAdmits(presented, projectId, orgId, mode)
      })

      /** A live project by the id a node names; a deleted one is gone for the node too. */
      const projectOf = Effect.fnUntraced(function* (projectId: string) {
        const row = yield* projects.findById(makeId("prj", projectId))
        if (Option.isNone(row) || row.value.deletingSince !== null) {
          return yield* new NotFound({ message: `project ${projectId} not found` })
        }
        return row.value
      })

      const check = Effect.fn("EdgePasses.check")(function* (input: NodeAccessCheck) {
        const project = yield* projectOf(input.projectId)
        // The policy as it is now, not as the node last read it: a project made public admits at once.
        const mode = (yield* access.policyOf(project.id)).mode
        return mode === "public" || (yield* admits(input, project.id, project.orgId, mode))
      })

      const exchange = Effect.fn("EdgePasses.exchange")(function* (host: string, code: string) {
        const grant = yield* access.exchangeCode(host, code)
        if (Option.isNone(grant))
          return yield* new Forbidden({ message: "this sign-in link is unknown, used or expired" })
        if (!admitsRole("org", grant.value.role)) {
          return yield* new Forbidden({ message: "this deployment is open to members of its organization" })
        }
        return yield* issue(host, grant.value.projectId, { userId: grant.value.userId })
      })

      const password = Effect.fn("EdgePasses.password")(function* (
        host: string,
        projectId: ProjectId,
        password: string
      ) {
        const generation = yield* access.passwordPass(projectId, password)
        if (Option.isNone(generation)) return Option.none<EdgePass>()
        return Option.some(yield* issue(host, projectId, { passwordGeneration: generation.value }))
      })

      const passwordOf = Effect.fn("EdgePasses.passwordOf")(function* (input: NodeAccessPassword) {
        const project = yield* projectOf(input.projectId)
        return yield* password(input.host, project.id, input.password)
      })

      return EdgePasses.of({ admits, check, exchange, password, passwordOf })
    })
  )
}
