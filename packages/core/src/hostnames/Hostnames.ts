import { Context, Effect, Layer, Option, Result } from "effect"
import { BadRequest, type Forbidden, HostnameTaken, NotFound } from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { AuditLog } from "../kernel/Audit.ts"
import { Policy } from "../kernel/Policy.ts"
import { canonicalHost } from "../kernel/HostName.ts"
import { Settings } from "../kernel/Settings.ts"
import { nowIso } from "../kernel/Time.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { Transactor } from "../kernel/Transactor.ts"
import { type Hostname, type HostnameRoute, type HostnameRow, toHostname } from "./Hostname.ts"
import { normalizeHostname, normalizeHostnameResult } from "./HostnameName.ts"
import { HostnameStore } from "./HostnameStore.ts"
import { ownershipCheck } from "./HostnameVerifier.ts"

/** Custom hostnames of spec 4.4: reserved across all orgs on add, routed once ownership is proven. */
export class Hostnames extends Context.Service<
  Hostnames,
  {
    readonly list: (
      actor: Actor,
      slug: string,
      projectName: string
    ) => Effect.Effect<ReadonlyArray<Hostname>, NotFound | Forbidden>
    /** Adds a custom name as `pending_dns`; the same project adding it again gets the existing row unchanged. */
    readonly add: (
      actor: Actor,
      slug: string,
      projectName: string,
      name: string
    ) => Effect.Effect<Hostname, NotFound | Forbidden | BadRequest | HostnameTaken>
    readonly remove: (
      actor: Actor,
      slug: string,
      projectName: string,
      host: string
    ) => Effect.Effect<void, NotFound | Forbidden | BadRequest>
    /** Runs the ownership check now: `active` on success, otherwise the status stays and `lastError` says why. */
    readonly verify: (
      actor: Actor,
      slug: string,
      projectName: string,
      host: string
    ) => Effect.Effect<Hostname, NotFound | Forbidden>
    /**
     * The edge's lookup: the project and org an `active` hostname routes to. `host` is the request's host name
     * without a port; case and a trailing dot are ignored. Unknown and `pending_dns` names are none (404
     * `unknown_hostname` at the edge).
     */
    readonly routeOf: (host: string) => Effect.Effect<Option.Option<HostnameRoute>>
  }
>()("@hostplane/core/hostnames/Hostnames") {
  static readonly layer = Layer.effect(
    Hostnames,
    Effect.gen(function* () {
      const store = yield* HostnameStore
      const policy = yield* Policy
      const audit = yield* AuditLog
      const tokens = yield* Tokens
      const tx = yield* Transactor
      const settings = yield* Settings
      const check = yield* ownershipCheck

      const view = (row: HostnameRow) => toHostname(row, settings.fallbackOrigin)

      /** The stored form of a name in a path; the default hostname sits under the app domain, which `add` refuses. */
      const keyOf = (host: string) =>
        Result.getOrElse(normalizeHostnameResult(host, settings), () => canonicalHost(host))

      const findIn = Effect.fnUntraced(function* (projectId: string, host: string) {
        const row = yield* store.find(keyOf(host))
        if (Option.isNone(row) || row.value.projectId !== projectId) {
          return yield* new NotFound({ message: `hostname ${host} not found` })
        }
        return row.value
      })

      const list = Effect.fn("Hostnames.list")(function* (actor: Actor, slug: string, projectName: string) {
        const { project } = yield* policy.requireProject(actor, slug, projectName, "viewer")
        return (yield* store.listByProject(project.id)).map(view)
      })

      const add = Effect.fn("Hostnames.add")(function* (
        actor: Actor,
        slug: string,
        projectName: string,
        input: string
      ) {
        const { org, project } = yield* policy.requireProject(actor, slug, projectName, "member")
        const name = yield* normalizeHostname(input, settings)
        const taken = () => new HostnameTaken({ message: `the hostname ${name} is already in use` })
        const existing = yield* store.find(name)
        if (Option.isSome(existing)) {
          if (existing.value.projectId === project.id) return view(existing.value)
          return yield* taken()
        }
        const row: HostnameRow = {
          name,
          projectId: project.id,
          orgId: org.id,
          kind: "custom",
          status: "pending_dns",
          verifyToken: yield* tokens.secret(24),
          lastError: null,
          createdAt: yield* nowIso,
          verifiedAt: null
        }
        return yield* tx
          .withTransaction(
            Effect.gen(function* () {
              yield* store.insert(row)
              yield* audit.record({
                action: "hostname.add",
                orgId: org.id,
                actorId: actor.userId,
                target: project.id,
                data: { project: project.name, hostname: name },
                at: row.createdAt
              })
              return view(row)
            })
          )
          .pipe(
            // A concurrent add of the same name by the same project answers like a repeat.
            Effect.catchTag("HostnameTaken", () =>
              Effect.flatMap(store.find(name), (winner) =>
                Option.isSome(winner) && winner.value.projectId === project.id
                  ? Effect.succeed(view(winner.value))
                  : Effect.fail(taken())
              )
            )
          )
      })

      const remove = Effect.fn("Hostnames.remove")(function* (
        actor: Actor,
        slug: string,
        projectName: string,
        host: string
      ) {
        const { org, project } = yield* policy.requireProject(actor, slug, projectName, "member")
        const row = yield* findIn(project.id, host)
        if (row.kind === "default") {
          return yield* new BadRequest({
            message: `${row.name} is the project's default hostname and cannot be deleted`
          })
        }
        // Removing the row takes the name out of routing; managed DNS records for it are removed by the DNS area later.
        yield* tx.withTransaction(
          Effect.gen(function* () {
            yield* store.remove(row.name)
            yield* audit.record({
              action: "hostname.delete",
              orgId: org.id,
              actorId: actor.userId,
              target: project.id,
              data: { project: project.name, hostname: row.name },
              at: yield* nowIso
            })
          })
        )
      })

      const verify = Effect.fn("Hostnames.verify")(function* (
        actor: Actor,
        slug: string,
        projectName: string,
        host: string
      ) {
        const { project } = yield* policy.requireProject(actor, slug, projectName, "member")
        const row = yield* findIn(project.id, host)
        const after = yield* check(row)
        if (Option.isNone(after)) return yield* new NotFound({ message: `hostname ${host} not found` })
        return view(after.value)
      })

      const routeOf = Effect.fn("Hostnames.routeOf")(function* (host: string) {
        const row = yield* store.find(canonicalHost(host))
        return Option.flatMap(row, (found) =>
          found.status === "active" ? Option.some({ projectId: found.projectId, orgId: found.orgId }) : Option.none()
        )
      })

      return Hostnames.of({ list, add, remove, verify, routeOf })
    })
  )
}
