import { Effect, Option, Schema } from "effect"
import { type DnsNotConfigured, RegistrarNotConfigured, SagaIncomplete } from "../errors/Errors.ts"
import { HostnamesConfig } from "../hostnames/HostnamesConfig.ts"
import { define, handler, JobFailure, type JobHandler, stop, type Stop } from "../jobs/Job.ts"
import { OrgId, UserId } from "../kernel/Ids.ts"
import { audited, Mutation, unaudited } from "../kernel/Mutation.ts"
import { Sealer } from "../secrets/Sealer.ts"
import { type Contact, contactContext, type DomainRow, registrarPhone } from "./Domain.ts"
import { DomainStore } from "./DomainStore.ts"
import { DomainZones } from "./DomainZones.ts"
import { type RegistrarContact, type RegistrarDomain, Registrar, RegistrarFailure } from "./Registrar.ts"
import { portOn } from "../kernel/Port.ts"

/**
 * The purchase saga of spec 4.13, one durable job per name: `register` (look the name up in the registrar account
 * first, so a lost answer never buys twice; else create it with the contact, our name servers, lock and registrar
 * auto-renew on), `zone` (the org's zone for it), `activate` (the row becomes `active` with its `domain.purchase`
 * audit row). Each step is recorded, so a resend or a runner after a crash continues at the step that was running.
 */
export const domainPurchase = define({
  kind: "domain_purchase",
  payload: Schema.Struct({ name: Schema.String, orgId: OrgId, actorId: UserId }),
  phases: ["register", "zone", "activate"]
})
export type DomainPurchasePayload = typeof domainPurchase.payload.Type

/** What a step can fail with; the request maps it to the spec's codes, the runner to a retry or a final failure. */
export type PurchaseStepError = RegistrarFailure | SagaIncomplete | RegistrarNotConfigured | DnsNotConfigured

/** The registrar's failures that leave nothing behind: retrying the same values cannot succeed. */
export const isFinalRefusal = (error: PurchaseStepError): boolean =>
  error._tag === "RegistrarFailure" && error.reason !== "error" && error.reason !== "not_found"

/** The contact copied to the registrar's form: the name split at its last space. */
export const registrarContact = (contact: Contact): RegistrarContact => {
  const name = contact.name.trim()
  const space = name.lastIndexOf(" ")
  return {
    firstName: space < 0 ? name : name.slice(0, space).trim(),
    lastName: space < 0 ? "" : name.slice(space + 1),
    companyName: contact.organization === undefined || contact.organization.trim() === "" ? null : contact.organization,
    address1: contact.address1,
    city: contact.city,
    zip: contact.postalCode,
    country: contact.country.toUpperCase(),
    phone: registrarPhone(contact.phone),
    email: contact.email
  }
}

const ContactJson = Schema.fromJsonString(
  Schema.Struct({
    name: Schema.String,
    email: Schema.String,
    phone: Schema.String,
    organization: Schema.optionalKey(Schema.String),
    address1: Schema.String,
    city: Schema.String,
    postalCode: Schema.String,
    country: Schema.String
  })
)
export const encodeContact = Schema.encodeSync(ContactJson)
const decodeContact = Schema.decodeUnknownSync(ContactJson)

/** The row with what the registrar says about the domain (the source of truth for expiry, lock and name servers). */
export const withRegistrar = (row: DomainRow, domain: RegistrarDomain): DomainRow => ({
  ...row,
  expiresAt: domain.expiresAt,
  locked: domain.locked,
  nameservers: [...domain.nameservers]
})

const sameNameservers = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => {
  const norm = (list: ReadonlyArray<string>) =>
    list
      .map((ns) => ns.toLowerCase().replace(/\.$/, ""))
      .sort()
      .join(",")
  return norm(a) === norm(b)
}

/** The saga's steps with their services resolved: the job's handler and the purchase request both run them. */
export const purchaseSteps = Effect.gen(function* () {
  const store = yield* DomainStore
  const sealer = yield* Sealer
  const mutation = yield* Mutation
  const config = yield* HostnamesConfig
  const registrarOption = portOn(yield* Registrar)
  const zones = yield* DomainZones

  const current = (payload: DomainPurchasePayload) =>
    Effect.map(store.find(payload.name), (row) =>
      Option.filter(
        row,
        (found) => found.orgId === payload.orgId && found.status === "registering" && found.purchase !== null
      )
    )

  const register = Effect.fnUntraced(function* (payload: DomainPurchasePayload) {
    const found = yield* current(payload)
    if (Option.isNone(found)) return stop
    const row = found.value
    const purchase = row.purchase!
    if (purchase.registered) return
    if (Option.isNone(registrarOption)) {
      return yield* new RegistrarNotConfigured({ message: "no registrar is configured" })
    }
    const registrar = registrarOption.value
    const nameservers = config.dnsNameservers
    // The answer to an earlier create may have been lost: a domain already in the account is ours, never bought again.
    const held = yield* registrar.get(row.name)
    let domain: RegistrarDomain
    if (Option.isSome(held)) {
      domain = sameNameservers(held.value.nameservers, nameservers)
        ? held.value
        : yield* registrar.setNameservers(row.name, nameservers)
    } else {
      if (purchase.contact === null) {
        return yield* new SagaIncomplete({ message: "the purchase lost its contact; send the purchase again" })
      }
      const contact = decodeContact(
        yield* sealer.open(purchase.contact, contactContext(row.orgId, row.name)).pipe(Effect.orDie)
      ) as Contact
      domain = yield* registrar
        .create({
          name: row.name,
          years: purchase.years,
          contact: registrarContact(contact),
          nameservers,
          locked: true,
          autorenew: true,
          purchaseCents: purchase.priceCents
        })
        .pipe(
          Effect.tapError((error) =>
            // A refusal leaves nothing behind (decisions.md part 10): the row and its sealed contact go.
            isFinalRefusal(error) ? store.remove(row.name) : Effect.void
          )
        )
    }
    yield* store.save({ ...withRegistrar(row, domain), purchase: { ...purchase, registered: true, contact: null } })
  })

  const zone = Effect.fnUntraced(function* (payload: DomainPurchasePayload) {
    const found = yield* current(payload)
    if (Option.isNone(found)) return stop
    yield* zones.enabled
    yield* zones.ensure({ orgId: payload.orgId, name: payload.name, actorId: payload.actorId }).pipe(
      Effect.catchTag("ZoneTaken", (error) =>
        // The domain is bought and points at our name servers; the zone conflict is for the two orgs to settle.
        Effect.logWarning("the purchased domain's zone belongs to another org", {
          domain: payload.name,
          error: error.message
        })
      )
    )
  })

  const activate = Effect.fnUntraced(function* (payload: DomainPurchasePayload) {
    const actor = { userId: payload.actorId, provider: "", subject: "", email: null, name: null }
    yield* mutation.lockedOrg(actor, payload.orgId, (at) =>
      Effect.gen(function* () {
        const found = yield* current(payload)
        if (Option.isNone(found) || !found.value.purchase!.registered) return unaudited(undefined)
        const row = found.value
        const expired = row.expiresAt !== null && row.expiresAt <= at
        yield* store.save({ ...row, status: expired ? "expired" : "active", purchase: null })
        return audited(undefined, {
          action: "domain.purchase",
          target: row.name,
          data: { years: row.purchase!.years, priceCents: row.purchase!.priceCents }
        })
      })
    )
  })

  const run = (phase: string, payload: DomainPurchasePayload): Effect.Effect<void | Stop, PurchaseStepError> => {
    switch (phase) {
      case "register":
        return register(payload)
      case "zone":
        return zone(payload)
      default:
        return activate(payload)
    }
  }
  return { run }
})

/** How the runner sees a failed step: a final refusal ends the job at once, anything else is retried. */
export const toJobFailure = (error: PurchaseStepError): JobFailure =>
  new JobFailure({
    message: error._tag === "RegistrarFailure" ? `registrar ${error.reason}: ${error.message}` : error.message,
    retryable: !isFinalRefusal(error)
  })

export const purchaseHandler = (
  run: (phase: string, payload: DomainPurchasePayload) => Effect.Effect<void | Stop, PurchaseStepError>
): JobHandler<DomainPurchasePayload> =>
  handler(domainPurchase, { run: (phase, job) => Effect.mapError(run(phase, job.payload), toJobFailure) })

/** The background half of the saga: a runner finishes a purchase whose request ended early or whose process died. */
export const domainPurchaseHandler: Effect.Effect<
  JobHandler,
  never,
  DomainStore | Sealer | Mutation | HostnamesConfig | DomainZones | Registrar
> = Effect.map(purchaseSteps, ({ run }) => purchaseHandler(run))
