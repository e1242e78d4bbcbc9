import { Clock, Context, Duration, Effect, Layer, Option, Semaphore } from "effect"
import { accessByHostRules, accessRules } from "./AccessPolicyRules.ts"
import { BadRequest, type Forbidden, NotFound, type OpInFlight } from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { parseHost } from "../kernel/HostName.ts"
import { audited, Mutation } from "../kernel/Mutation.ts"
import { Policy } from "../kernel/Policy.ts"
import { isoToMillis } from "../kernel/Time.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { Transactor } from "../kernel/Transactor.ts"
import { OrgStore } from "../orgs/OrgStore.ts"
import {
  type AccessAuthorize,
  type AccessBypass,
  type AccessGrant,
  type AccessPolicy,
  type AuthorizeInput,
  callbackPath,
  codeTtl,
  defaultAccessPolicy,
  toAccessPolicy
} from "./AccessPolicy.ts"
import { safeNextPath, type SetAccessPolicyInput } from "./AccessRules.ts"
import { AccessStore } from "./AccessStore.ts"
import { PasswordHasher } from "./PasswordHasher.ts"
import type { ProjectId } from "../kernel/Ids.ts"

/** Random bytes in a bypass secret and in a one-time code. */
const secretBytes = 32

/** Longer codes or secrets than this are refused unhashed: a real one is 43 characters. */
const maxPresented = 256

/** Compares two hex digests without an early exit. */
const sameDigest = (a: string, b: string): boolean => {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return diff === 0
}

/**
 * Password hashes computed at once. scrypt runs on libuv's small thread pool, which also reads the files the edge
 * serves: unbounded guessing at one project's form would slow every other project's assets.
 */
export const concurrentHashing = 2

const passwordProblem = (password: string): string | undefined => {
  const length = [...password].length
  return length < 8 || length > 200 ? "the password must be 8 to 200 characters" : undefined
}

/**
 * Access policy of spec 4.11 and the checks the edge runs before serving a deployment. The shared password is kept
 * only as a scrypt hash, the bypass secret and the one-time codes only as SHA-256; none of them reaches a response
 * (apart from the bypass, once), an audit row or a log.
 */
export class AccessPolicies extends Context.Service<
  AccessPolicies,
  {
    readonly get: (
      actor: Actor,
      orgSlug: string,
      projectName: string
    ) => Effect.Effect<AccessPolicy, NotFound | Forbidden>
    /**
     * Mode `password` with no password given now or before is 400; leaving the password out keeps the stored one.
     * Set and both bypass writes are 409 `op_in_flight` once the project's delete is accepted.
     */
    readonly set: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      input: SetAccessPolicyInput
    ) => Effect.Effect<AccessPolicy, NotFound | Forbidden | BadRequest | OpInFlight>
    /** Issues a new bypass secret, replacing any previous one. */
    readonly newBypass: (
      actor: Actor,
      orgSlug: string,
      projectName: string
    ) => Effect.Effect<AccessBypass, NotFound | Forbidden | OpInFlight>
    /** Clears the bypass secret; succeeds when there is none. */
    readonly revokeBypass: (
      actor: Actor,
      orgSlug: string,
      projectName: string
    ) => Effect.Effect<void, NotFound | Forbidden | OpInFlight>
    /**
     * A callback URL on the deployment's host with a one-time code for the caller: an unknown (or not yet active)
     * hostname is 404, a `next` that is not a same-site path 400, a caller below viewer in the owning org 403.
     */
    readonly authorize: (
      actor: Actor,
      input: AuthorizeInput
    ) => Effect.Effect<AccessAuthorize, NotFound | Forbidden | BadRequest>
    /** The policy the edge enforces for a project; `public` when it never set one. */
    readonly policyOf: (projectId: ProjectId) => Effect.Effect<AccessPolicy>
    /** True only when the project's mode is `password` and `password` matches the stored hash. */
    readonly checkPassword: (projectId: ProjectId, password: string) => Effect.Effect<boolean>
    /** As `checkPassword`, answering the password generation the right password belongs to (for the pass). */
    readonly passwordPass: (projectId: ProjectId, password: string) => Effect.Effect<Option.Option<number>>
    /** The project's current password generation: a password pass from an earlier one no longer admits. */
    readonly passwordGeneration: (projectId: ProjectId) => Effect.Effect<number>
    /** True when `secret` is the project's current bypass secret (the `Service-Access-Bypass` header), in any mode. */
    readonly checkBypass: (projectId: ProjectId, secret: string) => Effect.Effect<boolean>
    /**
     * Redeems a one-time code at the host it was issued for: some grant when the code is known, unused, unexpired,
     * issued for `host`, the host still routes to the same project and the user still belongs to the owning org.
     * Every attempt at its own host uses the code up, whatever the answer; an attempt at another host leaves it, so
     * a code cannot be burned for its host from elsewhere. The edge then admits the user with `admitsRole`.
     */
    readonly exchangeCode: (host: string, code: string) => Effect.Effect<Option.Option<AccessGrant>>
  }
>()("@hostplane/core/access/AccessPolicies") {
  static readonly layer = Layer.effect(
    AccessPolicies,
    Effect.gen(function* () {
      const store = yield* AccessStore
      const orgs = yield* OrgStore
      const hasher = yield* PasswordHasher
      const hashing = yield* Semaphore.make(concurrentHashing)
      const policy = yield* Policy
      const mutation = yield* Mutation
      const tokens = yield* Tokens
      const tx = yield* Transactor

      const now = Clock.currentTimeMillis
      const iso = (ms: number) => new Date(ms).toISOString()

      const policyOf = Effect.fn("AccessPolicies.policyOf")(function* (projectId: ProjectId) {
        const row = yield* store.findPolicy(projectId)
        return Option.isSome(row) ? toAccessPolicy(row.value) : defaultAccessPolicy
      })

      const get = Effect.fn("AccessPolicies.get")(function* (actor: Actor, orgSlug: string, projectName: string) {
        const { project } = yield* policy.requireProject(actor, orgSlug, projectName, accessRules.get)
        return yield* policyOf(project.id)
      })

      const set = Effect.fn("AccessPolicies.set")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        input: SetAccessPolicyInput
      ) {
        // decisions.md part 12: a bad password is 400 before a project being deleted is 409 (refused at the write).
        const grant = yield* mutation.authorizeProject(actor, orgSlug, projectName, accessRules.set)
        const problem = input.password === undefined ? undefined : passwordProblem(input.password)
        if (problem !== undefined) return yield* new BadRequest({ message: problem })
        // Hashing is deliberately slow: it runs before the transaction, so the org lock is held only for the write.
        const passwordHash =
          input.password === undefined ? null : yield* hashing.withPermits(1)(hasher.hash(input.password))
        return yield* mutation.project(
          grant,
          ({ project, at }) =>
            Effect.gen(function* () {
              const current = yield* store.findPolicy(project.id)
              const hadPassword = Option.isSome(current) && current.value.passwordHash !== null
              if (input.mode === "password" && passwordHash === null && !hadPassword) {
                return yield* new BadRequest({ message: "mode password needs a password: none has been set yet" })
              }
              const row = yield* store.setPolicy(project.id, input.mode, passwordHash, at)
              return audited(toAccessPolicy(row), {
                action: "access.set",
                target: project.id,
                data: { mode: input.mode, passwordChanged: passwordHash !== null }
              })
            }),
          { node: true }
        )
      })

      const newBypass = Effect.fn("AccessPolicies.newBypass")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string
      ) {
        const grant = yield* mutation.authorizeProject(actor, orgSlug, projectName, accessRules.newBypass)
        const secret = yield* tokens.secret(secretBytes)
        const hash = yield* tokens.hash(secret)
        yield* mutation.project(grant, ({ project, at }) =>
          Effect.as(
            store.setBypass(project.id, hash, at),
            audited(undefined, { action: "access.bypass.new", target: project.id })
          )
        )
        return { secret }
      })

      const revokeBypass = Effect.fn("AccessPolicies.revokeBypass")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string
      ) {
        const grant = yield* mutation.authorizeProject(actor, orgSlug, projectName, accessRules.revokeBypass)
        yield* mutation.project(grant, ({ project, at }) =>
          Effect.gen(function* () {
            const current = yield* store.findPolicy(project.id)
            const had = Option.isSome(current) && current.value.bypassHash !== null
            if (had) yield* store.setBypass(project.id, null, at)
            return audited(undefined, { action: "access.bypass.revoke", target: project.id, data: { revoked: had } })
          })
        )
      })

      const authorize = Effect.fn("AccessPolicies.authorize")(function* (actor: Actor, input: AuthorizeInput) {
        if (!safeNextPath(input.next)) {
          return yield* new BadRequest({ message: "next must be a path on the same site, starting with one /" })
        }
        const name = parseHost(input.to)
        const host = Option.isSome(name) ? yield* store.findActiveHost(name.value) : Option.none()
        if (Option.isNone(host)) return yield* new NotFound({ message: "this hostname is not served here" })
        yield* policy.requireOrgRole(actor, host.value.orgId, accessByHostRules.authorize)
        const code = yield* tokens.secret(secretBytes)
        const codeHash = yield* tokens.hash(code)
        const issued = yield* now
        yield* tx.withTransaction(
          Effect.gen(function* () {
            yield* store.purgeCodes(iso(issued))
            yield* store.insertCode({
              codeHash,
              host: host.value.name,
              projectId: host.value.projectId,
              orgId: host.value.orgId,
              userId: actor.userId,
              expiresAt: iso(issued + Duration.toMillis(codeTtl)),
              createdAt: iso(issued)
            })
          })
        )
        const url = `https://${host.value.name}${callbackPath}?code=${encodeURIComponent(code)}&next=${encodeURIComponent(input.next)}`
        return { url }
      })

      const passwordPass = Effect.fn("AccessPolicies.passwordPass")(function* (projectId: ProjectId, password: string) {
        const row = yield* store.findPolicy(projectId)
        if (Option.isNone(row) || row.value.mode !== "password" || row.value.passwordHash === null) {
          return Option.none<number>()
        }
        if (passwordProblem(password) !== undefined) return Option.none<number>()
        const ok = yield* hashing.withPermits(1)(hasher.verify(password, row.value.passwordHash))
        return ok ? Option.some(row.value.passwordGeneration) : Option.none<number>()
      })

      const checkPassword = (projectId: ProjectId, password: string) =>
        Effect.map(passwordPass(projectId, password), Option.isSome)

      const passwordGeneration = Effect.fn("AccessPolicies.passwordGeneration")(function* (projectId: ProjectId) {
        return Option.match(yield* store.findPolicy(projectId), {
          onNone: () => 0,
          onSome: (row) => row.passwordGeneration
        })
      })

      const checkBypass = Effect.fn("AccessPolicies.checkBypass")(function* (projectId: ProjectId, secret: string) {
        if (secret.length === 0 || secret.length > maxPresented) return false
        const row = yield* store.findPolicy(projectId)
        if (Option.isNone(row) || row.value.bypassHash === null) return false
        return sameDigest(yield* tokens.hash(secret), row.value.bypassHash)
      })

      const exchangeCode = Effect.fn("AccessPolicies.exchangeCode")(function* (host: string, code: string) {
        if (code.length === 0 || code.length > maxPresented) return Option.none<AccessGrant>()
        const name = parseHost(host)
        if (Option.isNone(name)) return Option.none<AccessGrant>()
        const taken = yield* store.takeCode(yield* tokens.hash(code), name.value)
        if (Option.isNone(taken)) return Option.none<AccessGrant>()
        const row = taken.value
        if ((yield* now) >= isoToMillis(row.expiresAt)) return Option.none<AccessGrant>()
        const routed = yield* store.findActiveHost(row.host)
        if (Option.isNone(routed) || routed.value.projectId !== row.projectId) return Option.none<AccessGrant>()
        const role = yield* orgs.findMembership(row.orgId, row.userId)
        if (Option.isNone(role)) return Option.none<AccessGrant>()
        return Option.some<AccessGrant>({
          userId: row.userId,
          projectId: row.projectId,
          orgId: row.orgId,
          role: role.value
        })
      })

      return AccessPolicies.of({
        get,
        set,
        newBypass,
        revokeBypass,
        authorize,
        policyOf,
        checkPassword,
        passwordPass,
        passwordGeneration,
        checkBypass,
        exchangeCode
      })
    })
  )
}
