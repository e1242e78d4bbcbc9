import { Context, Effect, Layer, Option, Result } from "effect"
import { hostnamesRules } from "./HostnamesRules.ts"
import { BadRequest, type Forbidden, HostnameTaken, NotFound, type OpInFlight } from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { audited, Mutation, unaudited } from "../kernel/Mutation.ts"
import { Policy } from "../kernel/Policy.ts"
import { canonicalHost } from "../kernel/HostName.ts"
import { Settings } from "../kernel/Settings.ts"
import { HostnamesConfig } from "./HostnamesConfig.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { type Hostname, type HostnameRoute, type HostnameRow, toHostname } from "./Hostname.ts"
import { normalizeHostname, normalizeHostnameResult } from "./HostnameName.ts"
import { HostedZones } from "./HostedZones.ts"
import { HostnameStore } from "./HostnameStore.ts"
import { hostnameCheck, ownershipSteps } from "./HostnameCheck.ts"
import { Jobs } from "../jobs/Jobs.ts"
import type { ProjectId } from "../kernel/Ids.ts"
import { nowIso } from "../kernel/Time.ts"
import { Transactor } from "../kernel/Transactor.ts"
import type { TeardownStep } from "../projects/ProjectHooks.ts"
import type { HostnameTls } from "../tls/Certificate.ts"
import { CertificateStore } from "../tls/CertificateStore.ts"
import { TlsConfig } from "../tls/TlsConfig.ts"
import { staticCovers, tlsIssue } from "../tls/TlsJobs.ts"

/** Custom hostnames of spec 4.4: reserved across all orgs on add, routed once ownership is proven. */
export class Hostnames extends Context.Service<
  Hostnames,
  {
    readonly list: (
      actor: Actor,
      slug: string,
      projectName: string
    ) => Effect.Effect<ReadonlyArray<Hostname>, NotFound | Forbidden>
    /**
     * Adds a custom name as `pending_dns`; the same project adding it again gets the existing row unchanged. Add,
     * remove and verify are 409 `op_in_flight` once the project's delete is accepted.
     */
    readonly add: (
      actor: Actor,
      slug: string,
      projectName: string,
      name: string
    ) => Effect.Effect<Hostname, NotFound | Forbidden | BadRequest | HostnameTaken | OpInFlight>
    readonly remove: (
      actor: Actor,
      slug: string,
      projectName: string,
      host: string
    ) => Effect.Effect<void, NotFound | Forbidden | BadRequest | OpInFlight>
    /** Runs the ownership check now: `active` on success, otherwise the status stays and `lastError` says why. */
    readonly verify: (
      actor: Actor,
      slug: string,
      projectName: string,
      host: string
    ) => Effect.Effect<Hostname, NotFound | Forbidden | OpInFlight>
    /**
     * Starts a new certificate attempt at once when the name's last one failed; changes nothing otherwise. Answers
     * the hostname either way.
     */
    readonly retryTls: (
      actor: Actor,
      slug: string,
      projectName: string,
      host: string
    ) => Effect.Effect<Hostname, NotFound | Forbidden | OpInFlight>
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
      const mutation = yield* Mutation
      const tokens = yield* Tokens
      // The service's own names, which a custom hostname may not take.
      const settings = { ...(yield* Settings), ...(yield* HostnamesConfig) }
      const { observe, record } = yield* ownershipSteps
      const jobs = yield* Jobs
      const zones = yield* HostedZones

      const certificates = yield* CertificateStore
      const { acme, staticCertificate } = yield* TlsConfig

      /** The name's certificate: the static one when it covers the name, else its ACME row (decisions.md part 16). */
      const tlsOf = Effect.fnUntraced(function* (name: string) {
        if (staticCertificate !== undefined && staticCovers(staticCertificate.names, name)) {
          return { status: "issued", expiresAt: staticCertificate.expiresAt, lastError: null } satisfies HostnameTls
        }
        if (!acme) return { status: "none", expiresAt: null, lastError: null } satisfies HostnameTls
        const row = yield* certificates.find(name)
        if (Option.isNone(row)) return { status: "pending", expiresAt: null, lastError: null } satisfies HostnameTls
        const { status, expiresAt, lastError } = row.value
        return { status, expiresAt, lastError } satisfies HostnameTls
      })

      const view = (row: HostnameRow) =>
        Effect.map(tlsOf(row.name), (certificate) => toHostname(row, settings.fallbackOrigin, certificate))

      /** The stored form of a name in a path; the default hostname sits under the app domain, which `add` refuses. */
      const keyOf = (host: string) =>
        Result.getOrElse(normalizeHostnameResult(host, settings), () => canonicalHost(host))

      const findIn = Effect.fnUntraced(function* (projectId: ProjectId, host: string) {
        const row = yield* store.find(keyOf(host))
        if (Option.isNone(row) || row.value.projectId !== projectId) {
          return yield* new NotFound({ message: `hostname ${host} not found` })
        }
        return row.value
      })

      const list = Effect.fn("Hostnames.list")(function* (actor: Actor, slug: string, projectName: string) {
        const { project } = yield* policy.requireProject(actor, slug, projectName, hostnamesRules.list)
        return yield* Effect.forEach(yield* store.listByProject(project.id), view)
      })

      const add = Effect.fn("Hostnames.add")(function* (
        actor: Actor,
        slug: string,
        projectName: string,
        input: string
      ) {
        // Authorization (404, 403), then the input (400), then the project's state (409 `op_in_flight`, checked under
        // the lock): decisions.md part 12's order, so a bad hostname is 400 on a project being deleted too.
        const grant = yield* mutation.authorizeProject(actor, slug, projectName, hostnamesRules.add)
        const name = yield* normalizeHostname(input, settings)
        const taken = () => new HostnameTaken({ message: `the hostname ${name} is already in use` })
        return yield* mutation
          .project(
            grant,
            ({ org, project, at }) =>
              Effect.gen(function* () {
                const existing = yield* store.find(name)
                if (Option.isSome(existing)) {
                  if (existing.value.projectId === project.id) return unaudited(yield* view(existing.value))
                  return yield* taken()
                }
                const verifyToken = yield* tokens.secret(24)
                const row: HostnameRow = {
                  name,
                  projectId: project.id,
                  orgId: org.id,
                  kind: "custom",
                  status: "pending_dns",
                  verifyToken,
                  lastError: null,
                  createdAt: at,
                  verifiedAt: null
                }
                yield* store.insert(row)
                // A name in the org's own zone gets the record that points it here, so it proves itself.
                yield* zones.link(name, org.id, settings.fallbackOrigin, at)
                yield* jobs.enqueue(hostnameCheck, { name, verifyToken }, { runAt: at })
                return audited(yield* view(row), {
                  action: "hostname.add",
                  target: project.id,
                  data: { project: project.name, hostname: name }
                })
              }),
            { node: true }
          )
          .pipe(
            // A concurrent add of the same name by the same project answers like a repeat.
            Effect.catchTag("HostnameTaken", () =>
              Effect.flatMap(store.find(name), (winner) =>
                Option.isSome(winner) && winner.value.projectId === grant.project.id
                  ? view(winner.value)
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
        const grant = yield* mutation.authorizeProject(actor, slug, projectName, hostnamesRules.remove)
        // Removing the row takes the name out of routing; the managed record `add` made for it goes with it.
        yield* mutation.project(
          grant,
          ({ project, at }) =>
            Effect.gen(function* () {
              const row = yield* findIn(project.id, host)
              if (row.kind === "default") {
                return yield* new BadRequest({
                  message: `${row.name} is the project's default hostname and cannot be deleted`
                })
              }
              yield* store.remove(row.name)
              yield* zones.unlink(row.name, at)
              return audited(undefined, {
                action: "hostname.delete",
                target: project.id,
                data: { project: project.name, hostname: row.name }
              })
            }),
          { node: true }
        )
      })

      const verify = Effect.fn("Hostnames.verify")(function* (
        actor: Actor,
        slug: string,
        projectName: string,
        host: string
      ) {
        const grant = yield* mutation.authorizeProject(actor, slug, projectName, hostnamesRules.verify)
        const row = yield* findIn(grant.project.id, host)
        const token = row.verifyToken
        if (row.status !== "pending_dns" || token === null) return yield* view(row)
        // DNS is asked before the transaction; only the outcome is written under the lock.
        const outcome = yield* observe(row, token)
        const after = yield* mutation.project(grant, () => Effect.map(record(row, token, outcome), unaudited))
        if (Option.isNone(after)) return yield* new NotFound({ message: `hostname ${host} not found` })
        return yield* view(after.value)
      })

      const retryTls = Effect.fn("Hostnames.retryTls")(function* (
        actor: Actor,
        slug: string,
        projectName: string,
        host: string
      ) {
        const grant = yield* mutation.authorizeProject(actor, slug, projectName, hostnamesRules.retryTls)
        const row = yield* findIn(grant.project.id, host)
        // Only a failed attempt is retried, and at once: the backoff is waived, the sweep's order started now.
        yield* mutation.project(grant, () =>
          Effect.gen(function* () {
            const certificate = yield* certificates.find(row.name)
            if (!acme || Option.isNone(certificate) || certificate.value.status !== "failed")
              return unaudited(undefined)
            const at = yield* nowIso
            yield* certificates.put({ ...certificate.value, status: "pending", retryAt: null, updatedAt: at })
            yield* jobs.enqueue(tlsIssue, { name: row.name }, { key: row.name, runAt: at })
            return unaudited(undefined)
          })
        )
        return yield* view(yield* findIn(grant.project.id, host))
      })

      const routeOf = Effect.fn("Hostnames.routeOf")(function* (host: string) {
        const row = yield* store.find(canonicalHost(host))
        return Option.flatMap(row, (found) =>
          found.status === "active" ? Option.some({ projectId: found.projectId, orgId: found.orgId }) : Option.none()
        )
      })

      return Hostnames.of({ list, add, remove, verify, retryTls, routeOf })
    })
  )
}

/**
 * A project delete's routing phase: the managed records of the project's custom hostnames go before the hostnames
 * themselves (the project delete removes those after the phase's steps).
 */
export const hostnameTeardown: Effect.Effect<TeardownStep, never, HostnameStore | HostedZones | Transactor> =
  Effect.gen(function* () {
    const store = yield* HostnameStore
    const zones = yield* HostedZones
    const tx = yield* Transactor
    return {
      phase: "routing",
      run: (project) =>
        tx.withTransaction(
          Effect.gen(function* () {
            const at = yield* nowIso
            for (const row of yield* store.listByProject(project.id)) {
              if (row.kind === "custom") yield* zones.unlink(row.name, at)
            }
          })
        )
    }
  })
