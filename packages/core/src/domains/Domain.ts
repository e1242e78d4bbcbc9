import { Schema } from "effect"
import { Email } from "../orgs/Org.ts"
import type { OrgId, UserId } from "../kernel/Ids.ts"
import type { Sealed } from "../secrets/Sealer.ts"

/** Domain statuses of decisions.md part 4. */
export const DomainStatus = Schema.Literals(["registering", "active", "imported", "transferred_out", "expired"])
export type DomainStatus = typeof DomainStatus.Type

export const DomainSource = Schema.Literals(["purchase", "import"])
export type DomainSource = typeof DomainSource.Type

/** A registered or imported domain (decisions.md part 4); `autoRenew` is the org's preference. */
export const Domain = Schema.Struct({
  name: Schema.String,
  status: DomainStatus,
  source: DomainSource,
  expiresAt: Schema.NullOr(Schema.String),
  autoRenew: Schema.Boolean,
  locked: Schema.Boolean,
  nameservers: Schema.Array(Schema.String),
  createdAt: Schema.String
})
export type Domain = typeof Domain.Type

export const DomainList = Schema.Struct({ items: Schema.Array(Domain) })
export type DomainList = typeof DomainList.Type

/** One audit event of the domain: no contact data, no codes. */
export const DomainHistoryEntry = Schema.Struct({
  action: Schema.String,
  at: Schema.String,
  userId: Schema.NullOr(Schema.String)
})
export type DomainHistoryEntry = typeof DomainHistoryEntry.Type

export const DomainDetail = Schema.Struct({ ...Domain.fields, history: Schema.Array(DomainHistoryEntry) })
export type DomainDetail = typeof DomainDetail.Type

/** The largest number of names one check may ask about (decisions.md part 10). */
export const maxCheckNames = 50

const Text = (max: number) =>
  Schema.String.check(
    Schema.isMaxLength(max),
    Schema.makeFilter((value: string) => value.trim() !== "" || "must not be empty")
  )

/** `+<country code>.<number>`, or the code and number separated by a space, with the number's own spaces, dots and dashes. */
const phonePattern = /^\+(\d{1,3})[ .]([\d .-]{4,20})$/

/** The registrant contact; passed to the registrar and kept nowhere in the clear. */
export const Contact = Schema.Struct({
  name: Text(200),
  email: Email,
  phone: Schema.String.check(
    Schema.isPattern(phonePattern, {
      message: "expected +<country code>.<number>, such as +1.5551234567 or +44 20 7946 0958"
    })
  ),
  organization: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(200))),
  address1: Text(200),
  city: Text(100),
  postalCode: Text(20),
  country: Schema.String.check(
    Schema.isPattern(/^[A-Za-z]{2}$/, { message: "expected a two-letter ISO 3166 country code" })
  )
})
export type Contact = typeof Contact.Type

/** The phone in the registrar's `+CC.NUMBER` form. */
export const registrarPhone = (phone: string): string => {
  const match = phonePattern.exec(phone.trim())
  return match === null ? phone : `+${match[1]}.${match[2]!.replace(/[ .-]/g, "")}`
}

const Years = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10 }))

export const PurchaseDomainInput = Schema.Struct({
  name: Schema.String,
  years: Schema.optionalKey(Years),
  contact: Contact
})
export type PurchaseDomainInput = typeof PurchaseDomainInput.Type

export const CheckDomainsInput = Schema.Struct({
  names: Schema.Array(Schema.String).check(Schema.isMinLength(1), Schema.isMaxLength(maxCheckNames))
})
export type CheckDomainsInput = typeof CheckDomainsInput.Type

export const DomainAvailability = Schema.Struct({
  name: Schema.String,
  available: Schema.Boolean,
  premium: Schema.Boolean,
  priceCents: Schema.NullOr(Schema.Int),
  renewalCents: Schema.NullOr(Schema.Int)
})
export type DomainAvailability = typeof DomainAvailability.Type

export const DomainAvailabilityList = Schema.Struct({ items: Schema.Array(DomainAvailability) })

export const ImportDomainInput = Schema.Struct({ name: Schema.String })
export const RenewDomainInput = Schema.Struct({ years: Years })
export const AutoRenewInput = Schema.Struct({ autoRenew: Schema.Boolean })
export const LockDomainInput = Schema.Struct({ locked: Schema.Boolean })
export const AuthCode = Schema.Struct({ authCode: Schema.String })

/** What a purchase in progress keeps: the contact only sealed, and only until the registrar has it. */
export interface PurchaseState {
  readonly years: number
  readonly priceCents: number | null
  readonly contact: Sealed | null
  /** Set once the registrar holds the domain (the saga's first step recorded). */
  readonly registered: boolean
  readonly actorId: UserId
}

/** The stored domain: unique by name across every org. */
export interface DomainRow {
  readonly name: string
  readonly orgId: OrgId
  readonly status: DomainStatus
  readonly source: DomainSource
  readonly expiresAt: string | null
  readonly autoRenew: boolean
  readonly locked: boolean
  readonly nameservers: ReadonlyArray<string>
  readonly createdAt: string
  /** Present while `registering`. */
  readonly purchase: PurchaseState | null
}

export const domainOf = (row: DomainRow): Domain => ({
  name: row.name,
  status: row.status,
  source: row.source,
  expiresAt: row.expiresAt,
  autoRenew: row.autoRenew,
  locked: row.locked,
  nameservers: [...row.nameservers],
  createdAt: row.createdAt
})

/** The additional authenticated data of a sealed purchase contact, so it opens only for that purchase. */
export const contactContext = (orgId: string, name: string): string => `domain-contact/${orgId}/${name}`
