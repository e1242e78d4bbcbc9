import { Context, Duration, Effect, Layer, Option, Redacted, Ref } from "effect"
import {
  BadRequest,
  DnsNotConfigured,
  DomainTaken,
  DomainUnavailable,
  type Forbidden,
  NotFound,
  NotRegisteredHere,
  PaymentFailed,
  RegistrarError,
  RegistrarNotConfigured,
  RegistrarRejected,
  SagaIncomplete
} from "../errors/Errors.ts"
import { HostnamesConfig } from "../hostnames/HostnamesConfig.ts"
import { normalizeHostname } from "../hostnames/HostnameName.ts"
import { Jobs } from "../jobs/Jobs.ts"
import type { Actor } from "../kernel/Actor.ts"
import { UserId } from "../kernel/Ids.ts"
import { type AuditEntry, audited, Mutation, type OrgGrant, unaudited } from "../kernel/Mutation.ts"
import { Policy } from "../kernel/Policy.ts"
import { Settings } from "../kernel/Settings.ts"
import type { HoldingCounter } from "../orgs/OrgHooks.ts"
import { Sealer } from "../secrets/Sealer.ts"
import {
  type Contact,
  contactContext,
  type Domain,
  type DomainAvailability,
  type DomainDetail,
  domainOf,
  type DomainRow
} from "./Domain.ts"
import {
  domainPurchase,
  encodeContact,
  type PurchaseStepError,
  purchaseHandler,
  purchaseSteps,
  withRegistrar
} from "./DomainPurchase.ts"
import { DomainStore } from "./DomainStore.ts"
import { DomainZones } from "./DomainZones.ts"
import { domainRules } from "./DomainRules.ts"
import { Registrar, type RegistrarDomain, type RegistrarFailure, type RegistrarPage } from "./Registrar.ts"
import { portOn } from "../kernel/Port.ts"

/** The actor of the background sync: its writes record no audit row. */
const systemActor = {
  userId: UserId.make("usr_system"),
  provider: "system",
  subject: "domain-sync",
  email: null,
  name: null
}

/** A purchase's answer: 201 when this request finished it, 200 when it was finished before. */
export interface Purchased {
  readonly domain: Domain
  readonly created: boolean
}

/** How long a purchase request waits for a runner that holds its saga before answering 502 `saga_incomplete`. */
const waitForRunner = Duration.seconds(10)

type RegistrarApiError = PaymentFailed | RegistrarRejected | DomainUnavailable | NotRegisteredHere | RegistrarError

/** The spec's code for a registrar failure (decisions.md part 7). */
export const registrarError = (error: RegistrarFailure): RegistrarApiError => {
  const message = `the registrar refused: ${error.message}`
  switch (error.reason) {
    case "payment_failed":
      return new PaymentFailed({ message: `the registrar declined the payment: ${error.message}` })
    case "rejected":
      return new RegistrarRejected({ message })
    case "unavailable":
      return new DomainUnavailable({ message: `the registrar says the name is not available: ${error.message}` })
    case "not_found":
      return new NotRegisteredHere({ message: "the registrar account does not hold this domain" })
    case "error":
      return new RegistrarError({ message: `the registrar failed: ${error.message}` })
  }
}

const stepError = (error: PurchaseStepError) =>
  error._tag === "RegistrarFailure"
    ? registrarError(error)
    : error._tag === "SagaIncomplete"
      ? error
      : new SagaIncomplete({ message: `the purchase is not finished: ${error.message}; send it again` })

/** The row as the registrar reports it now: gone is `transferred_out`, found again `active`, past expiry `expired`. */
export const synced = (row: DomainRow, found: Option.Option<RegistrarDomain>, now: string): DomainRow => {
  if (Option.isNone(found)) return { ...row, status: "transferred_out" }
  const next = withRegistrar(row, found.value)
  return { ...next, status: next.expiresAt !== null && next.expiresAt <= now ? "expired" : "active" }
}

/**
 * Domain registration and import of spec 4.13 through the `Registrar` port: a purchase is a durable saga
 * (`domain_purchase`) that the request drives itself and a runner finishes if the request ends early; the contact is
 * sealed until the registrar has it and never appears in a row, an audit row or a log line; auth codes are never kept.
 */
export class Domains extends Context.Service<
  Domains,
  {
    readonly list: (actor: Actor, orgSlug: string) => Effect.Effect<ReadonlyArray<Domain>, NotFound | Forbidden>
    readonly get: (actor: Actor, orgSlug: string, name: string) => Effect.Effect<DomainDetail, NotFound | Forbidden>
    readonly check: (
      actor: Actor,
      orgSlug: string,
      names: ReadonlyArray<string>
    ) => Effect.Effect<
      ReadonlyArray<DomainAvailability>,
      NotFound | Forbidden | BadRequest | RegistrarNotConfigured | RegistrarApiError
    >
    readonly purchase: (
      actor: Actor,
      orgSlug: string,
      input: { readonly name: string; readonly years?: number; readonly contact: Contact }
    ) => Effect.Effect<
      Purchased,
      | NotFound
      | Forbidden
      | BadRequest
      | RegistrarNotConfigured
      | DnsNotConfigured
      | DomainTaken
      | RegistrarApiError
      | SagaIncomplete
    >
    readonly import: (
      actor: Actor,
      orgSlug: string,
      name: string
    ) => Effect.Effect<Purchased, NotFound | Forbidden | BadRequest | DnsNotConfigured | DomainTaken>
    readonly renew: (
      actor: Actor,
      orgSlug: string,
      name: string,
      years: number
    ) => Effect.Effect<Domain, NotFound | Forbidden | RegistrarNotConfigured | RegistrarApiError>
    readonly setAutoRenew: (
      actor: Actor,
      orgSlug: string,
      name: string,
      autoRenew: boolean
    ) => Effect.Effect<Domain, NotFound | Forbidden>
    readonly setLock: (
      actor: Actor,
      orgSlug: string,
      name: string,
      locked: boolean
    ) => Effect.Effect<Domain, NotFound | Forbidden | RegistrarNotConfigured | RegistrarApiError>
    readonly authCode: (
      actor: Actor,
      orgSlug: string,
      name: string
    ) => Effect.Effect<Redacted.Redacted<string>, NotFound | Forbidden | RegistrarNotConfigured | RegistrarApiError>
    readonly sync: (
      actor: Actor,
      orgSlug: string,
      name: string
    ) => Effect.Effect<Domain, NotFound | Forbidden | RegistrarNotConfigured | RegistrarApiError>
    /** The daily background sync: every registered domain against the registrar's paged list. */
    readonly syncAll: Effect.Effect<number, RegistrarFailure>
  }
>()("@hostplane/core/domains/Domains") {
  static readonly layer = Layer.effect(
    Domains,
    Effect.gen(function* () {
      const store = yield* DomainStore
      const policy = yield* Policy
      const mutation = yield* Mutation
      const sealer = yield* Sealer
      const jobs = yield* Jobs
      const settings = yield* Settings
      const hostnames = yield* HostnamesConfig
      const registrarOption = portOn(yield* Registrar)
      const zonePort = yield* DomainZones
      const steps = yield* purchaseSteps

      const nameSettings = {
        appDomain: settings.appDomain,
        serviceDomains: settings.serviceDomains,
        fallbackOrigin: hostnames.fallbackOrigin
      }
      const domainName = (input: string) => normalizeHostname(input, nameSettings)

      const registrar = Effect.fromOption(registrarOption).pipe(
        Effect.mapError(
          () =>
            new RegistrarNotConfigured({
              message: "domain registration is off: SERVICE_REGISTRAR_URL, _USERNAME and _TOKEN are not set"
            })
        )
      )
      const call = <A>(effect: Effect.Effect<A, RegistrarFailure>) => Effect.mapError(effect, registrarError)

      /** The org's domain of that name, else 404 (a name of another org included). */
      const owned = Effect.fnUntraced(function* (grant: { readonly org: { readonly id: string } }, name: string) {
        const row = yield* store.find(name.trim().toLowerCase().replace(/\.$/, ""))
        if (Option.isNone(row) || row.value.orgId !== grant.org.id) {
          return yield* new NotFound({ message: `domain ${name} not found` })
        }
        return row.value
      })

      /** Renew, lock, auth code and sync act on a domain the registrar holds for this service. */
      const registered = Effect.fnUntraced(function* (grant: OrgGrant, name: string) {
        const row = yield* owned(grant, name)
        if (row.source !== "purchase" || row.status === "registering" || row.status === "transferred_out") {
          return yield* new NotRegisteredHere({
            message:
              row.source === "import"
                ? `${row.name} is imported: it is registered elsewhere`
                : `${row.name} is ${row.status === "registering" ? "still being registered" : "no longer registered here"}`
          })
        }
        return row
      })

      /** Saves what the registrar answered, under the org lock, with the audit row if any. */
      const record = (
        grant: OrgGrant,
        name: string,
        change: (row: DomainRow) => DomainRow,
        entry?: Omit<AuditEntry, "target">
      ) =>
        mutation.org(grant, () =>
          Effect.gen(function* () {
            const row = yield* owned(grant, name)
            const next = change(row)
            yield* store.save(next)
            const domain = domainOf(next)
            return entry === undefined ? unaudited(domain) : audited(domain, { ...entry, target: row.name })
          })
        )

      const list = Effect.fn("Domains.list")(function* (actor: Actor, orgSlug: string) {
        const { org } = yield* policy.require(actor, orgSlug, domainRules.list)
        return (yield* store.list(org.id)).map(domainOf)
      })

      const get = Effect.fn("Domains.get")(function* (actor: Actor, orgSlug: string, name: string) {
        const membership = yield* policy.require(actor, orgSlug, domainRules.get)
        const row = yield* owned(membership, name)
        const events = yield* mutation.history(membership.org.id, row.name)
        const history = events
          .filter((event) => event.action.startsWith("domain."))
          .map((event) => ({ action: event.action, at: event.at, userId: event.actorId }))
          .reverse()
        return { ...domainOf(row), history }
      })

      const check = Effect.fn("Domains.check")(function* (actor: Actor, orgSlug: string, input: ReadonlyArray<string>) {
        yield* policy.require(actor, orgSlug, domainRules.check)
        const names = [...new Set(yield* Effect.forEach(input, domainName))]
        const answers = yield* call((yield* registrar).checkAvailability(names))
        const byName = new Map(answers.map((answer) => [answer.name.toLowerCase(), answer]))
        return names.map((name): DomainAvailability => {
          const answer = byName.get(name)
          return {
            name,
            available: answer?.purchasable ?? false,
            premium: answer?.premium ?? false,
            priceCents: answer?.purchaseCents ?? null,
            renewalCents: answer?.renewalCents ?? null
          }
        })
      })

      /** The saga's job for `name`, unless an unfinished one has it; joins the caller's transaction. */
      const enqueue = (grant: OrgGrant, name: string, actor: Actor) =>
        jobs.enqueue(domainPurchase, { name, orgId: grant.org.id, actorId: actor.userId }, { key: name })

      /** Drives the saga of `name` now; when a runner holds it, waits a while for that runner instead. */
      const drive = Effect.fnUntraced(function* (name: string) {
        const failure = yield* Ref.make(Option.none<PurchaseStepError>())
        const handler = purchaseHandler((phase, payload) =>
          steps.run(phase, payload).pipe(Effect.tapError((error) => Ref.set(failure, Option.some(error))))
        )
        const job = yield* jobs.findUnfinished(domainPurchase, name)
        if (Option.isSome(job)) {
          const ran = yield* jobs.runNow(handler, job.value.id)
          if (Option.isNone(ran)) {
            yield* Effect.sleep(Duration.millis(200)).pipe(
              Effect.andThen(store.find(name)),
              Effect.repeat({
                until: (row) => Option.isNone(row) || row.value.status !== "registering",
                times: Math.ceil(Duration.toMillis(waitForRunner) / 200)
              })
            )
          }
        }
        const after = yield* store.find(name)
        const error = yield* Ref.get(failure)
        if (Option.isSome(after) && after.value.status !== "registering") return after.value
        if (Option.isSome(error)) return yield* stepError(error.value)
        return yield* new SagaIncomplete({ message: `the purchase of ${name} is not finished yet; send it again` })
      })

      const purchase = Effect.fn("Domains.purchase")(function* (
        actor: Actor,
        orgSlug: string,
        input: { readonly name: string; readonly years?: number; readonly contact: Contact }
      ) {
        const grant = yield* mutation.authorizeOrg(actor, orgSlug, domainRules.purchase)
        const name = yield* domainName(input.name)
        const client = yield* registrar
        yield* zonePort.enabled
        const existing = yield* store.find(name)
        const freeToBuy = (row: DomainRow) =>
          row.status === "transferred_out" || (row.orgId === grant.org.id && row.status === "imported")
        if (Option.isSome(existing) && !freeToBuy(existing.value)) {
          if (existing.value.orgId !== grant.org.id) {
            return yield* new DomainTaken({ message: `${name} is held by another organization here` })
          }
          if (existing.value.status !== "registering") return { domain: domainOf(existing.value), created: false }
        }
        if (Option.isNone(existing) || freeToBuy(existing.value)) {
          const [quote] = yield* call(client.checkAvailability([name]))
          if (quote === undefined || !quote.purchasable) {
            return yield* new DomainUnavailable({ message: `${name} is not available for registration` })
          }
          const sealed = yield* sealer.seal(encodeContact(input.contact), contactContext(grant.org.id, name))
          yield* mutation.org(grant, ({ at }) =>
            Effect.gen(function* () {
              const now = yield* store.find(name)
              if (Option.isSome(now) && !freeToBuy(now.value)) {
                if (now.value.orgId !== grant.org.id) {
                  return yield* new DomainTaken({ message: `${name} is held by another organization here` })
                }
                return unaudited(undefined)
              }
              const row: DomainRow = {
                name,
                orgId: grant.org.id,
                status: "registering",
                source: "purchase",
                expiresAt: null,
                autoRenew: true,
                locked: true,
                nameservers: [...hostnames.dnsNameservers],
                createdAt: at,
                purchase: {
                  years: input.years ?? 1,
                  priceCents: quote.purchaseCents,
                  contact: sealed,
                  registered: false,
                  actorId: actor.userId
                }
              }
              const stored = Option.isSome(now) ? yield* store.save(row) : yield* store.insert(row)
              if (!stored) return yield* new DomainTaken({ message: `${name} is held by another organization here` })
              yield* enqueue(grant, name, actor)
              return unaudited(undefined)
            })
          )
        } else {
          // A saga that ended (failed after its retries) gets a new job; an unfinished one is continued.
          yield* enqueue(grant, name, actor)
        }
        const row = yield* drive(name)
        return { domain: domainOf(row), created: true }
      })

      const importDomain = Effect.fn("Domains.import")(function* (actor: Actor, orgSlug: string, input: string) {
        const grant = yield* mutation.authorizeOrg(actor, orgSlug, domainRules.import)
        const name = yield* domainName(input)
        yield* zonePort.enabled
        const existing = yield* store.find(name)
        if (Option.isSome(existing) && existing.value.status !== "transferred_out") {
          if (existing.value.orgId !== grant.org.id) {
            return yield* new DomainTaken({ message: `${name} is held by another organization here` })
          }
          return { domain: domainOf(existing.value), created: false }
        }
        yield* zonePort
          .ensure({ orgId: grant.org.id, name, actorId: actor.userId })
          .pipe(
            Effect.catchTag("ZoneTaken", () =>
              Effect.fail(new DomainTaken({ message: `the zone of ${name} belongs to another organization here` }))
            )
          )
        return yield* mutation.org(grant, ({ at }) =>
          Effect.gen(function* () {
            const now = yield* store.find(name)
            if (Option.isSome(now) && now.value.status !== "transferred_out") {
              if (now.value.orgId !== grant.org.id) {
                return yield* new DomainTaken({ message: `${name} is held by another organization here` })
              }
              return unaudited({ domain: domainOf(now.value), created: false })
            }
            const row: DomainRow = {
              name,
              orgId: grant.org.id,
              status: "imported",
              source: "import",
              expiresAt: null,
              autoRenew: false,
              locked: false,
              nameservers: [...hostnames.dnsNameservers],
              createdAt: at,
              purchase: null
            }
            if (!(Option.isSome(now) ? yield* store.save(row) : yield* store.insert(row))) {
              return yield* new DomainTaken({ message: `${name} is held by another organization here` })
            }
            return audited({ domain: domainOf(row), created: true }, { action: "domain.import", target: name })
          })
        )
      })

      const renew = Effect.fn("Domains.renew")(function* (actor: Actor, orgSlug: string, name: string, years: number) {
        const grant = yield* mutation.authorizeOrg(actor, orgSlug, domainRules.renew)
        const row = yield* registered(grant, name)
        const client = yield* registrar
        const now = yield* call(client.get(row.name))
        const price = Option.isSome(now) && now.value.renewalCents !== null ? now.value.renewalCents * years : null
        const renewed = yield* call(client.renew(row.name, years, price))
        return yield* mutation.org(grant, ({ at }) =>
          Effect.gen(function* () {
            const next = synced(yield* owned(grant, name), Option.some(renewed), at)
            yield* store.save(next)
            return audited(domainOf(next), { action: "domain.renew", target: row.name, data: { years } })
          })
        )
      })

      const setAutoRenew = Effect.fn("Domains.setAutoRenew")(function* (
        actor: Actor,
        orgSlug: string,
        name: string,
        autoRenew: boolean
      ) {
        const grant = yield* mutation.authorizeOrg(actor, orgSlug, domainRules.autoRenew)
        yield* owned(grant, name)
        // The org's preference only: auto-renewal at the registrar stays on (spec 4.13).
        return yield* record(grant, name, (row) => ({ ...row, autoRenew }))
      })

      const setLock = Effect.fn("Domains.setLock")(function* (
        actor: Actor,
        orgSlug: string,
        name: string,
        locked: boolean
      ) {
        const grant = yield* mutation.authorizeOrg(actor, orgSlug, domainRules.lock)
        const row = yield* registered(grant, name)
        const answer = yield* call((yield* registrar).setLock(row.name, locked))
        return yield* record(grant, name, (current) => ({ ...current, locked: answer.locked }), {
          action: "domain.lock",
          data: { locked: answer.locked }
        })
      })

      const authCode = Effect.fn("Domains.authCode")(function* (actor: Actor, orgSlug: string, name: string) {
        const grant = yield* mutation.authorizeOrg(actor, orgSlug, domainRules.authCode)
        const row = yield* registered(grant, name)
        const code = yield* call((yield* registrar).authCode(row.name))
        // The audit row says a code was handed out, never which.
        return yield* mutation.org(grant, () =>
          Effect.succeed(audited(code, { action: "domain.auth_code", target: row.name }))
        )
      })

      const sync = Effect.fn("Domains.sync")(function* (actor: Actor, orgSlug: string, name: string) {
        const grant = yield* mutation.authorizeOrg(actor, orgSlug, domainRules.sync)
        const row = yield* owned(grant, name)
        if (row.source !== "purchase" || row.status === "registering") {
          return yield* new NotRegisteredHere({ message: `${row.name} is not registered through this service` })
        }
        const found = yield* call((yield* registrar).get(row.name))
        return yield* mutation.org(grant, ({ at }) =>
          Effect.gen(function* () {
            const next = synced(yield* owned(grant, name), found, at)
            yield* store.save(next)
            return unaudited(domainOf(next))
          })
        )
      })

      const syncAll = Effect.gen(function* () {
        if (Option.isNone(registrarOption)) return 0
        const client = registrarOption.value
        const held = new Map<string, RegistrarDomain>()
        for (let page: number | null = 1, pages = 0; page !== null && pages < 10_000; pages++) {
          const answer: RegistrarPage = yield* client.list(page)
          for (const domain of answer.domains) held.set(domain.name.toLowerCase(), domain)
          page = answer.nextPage
        }
        let changed = 0
        for (const listed of yield* store.listRegistered) {
          const entry = Option.fromNullishOr(held.get(listed.name))
          // Under the org lock, on the row as it then stands, so a concurrent change (a lock, a preference) is kept.
          const moved = yield* mutation.lockedOrg(systemActor, listed.orgId, (at) =>
            Effect.gen(function* () {
              const row = yield* store.find(listed.name)
              if (Option.isNone(row) || row.value.orgId !== listed.orgId || row.value.status === "registering") {
                return unaudited(false)
              }
              // The registrar's list leaves the name servers out (GetDomain has them): keep the known ones.
              const found = Option.map(entry, (domain) =>
                domain.nameservers.length > 0 ? domain : { ...domain, nameservers: row.value.nameservers }
              )
              const next = synced(row.value, found, at)
              if (JSON.stringify(next) === JSON.stringify(row.value)) return unaudited(false)
              if (next.status !== row.value.status) {
                yield* Effect.logInfo("domain status changed at the registrar", {
                  domain: next.name,
                  from: row.value.status,
                  to: next.status
                })
              }
              yield* store.save(next)
              return unaudited(true)
            })
          )
          if (moved) changed++
        }
        return changed
      }).pipe(Effect.withSpan("Domains.syncAll"))

      return Domains.of({
        list,
        get,
        check,
        purchase,
        import: importDomain,
        renew,
        setAutoRenew,
        setLock,
        authCode,
        sync,
        syncAll
      })
    })
  )
}

/** An org holds its domains until they are transferred out (decisions.md part 10). */
export const domainHoldings = Effect.map(Effect.service(DomainStore), (store): HoldingCounter => ({
  kind: "domains",
  count: (orgId) =>
    Effect.map(store.list(orgId), (rows) => {
      const held = rows.filter((row) => row.status !== "transferred_out")
      return { count: held.length, names: held.map((row) => row.name).slice(0, 5) }
    })
}))
