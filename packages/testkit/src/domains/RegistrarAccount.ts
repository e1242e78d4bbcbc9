/**
 * A registrar account as Name.com's API v4 keeps it, in memory: the state behind both the loopback fake of that API
 * (`FakeNameCom`) and the in-process `RegistrarMemory`. Prices are decimal USD as Name.com writes them; fields Name.com
 * leaves out when false or empty (Go's `omitempty`) are left out here too.
 */
export interface AccountDomain {
  domainName: string
  nameservers: Array<string>
  locked: boolean
  autorenewEnabled: boolean
  expireDate: string
  createDate: string
  renewalPrice: number
  authCode: string
}

/** A refusal as the API answers it: the HTTP status and the `{ message, details }` body. */
export interface Refusal {
  readonly status: number
  readonly message: string
  readonly details?: string
}

export const isRefusal = (value: unknown): value is Refusal =>
  typeof value === "object" && value !== null && "status" in value && "message" in value

const contactRoles = ["registrant", "admin", "tech", "billing"] as const
const requiredContactFields = ["firstName", "lastName", "address1", "city", "zip", "country", "phone", "email"] as const

const yearsLater = (from: Date, years: number) => {
  const next = new Date(from)
  next.setUTCFullYear(next.getUTCFullYear() + years)
  return next
}

/** Name.com writes times without fractions: `2031-01-01T00:00:00Z`. */
const stamp = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, "Z")

export class RegistrarAccount {
  readonly domains = new Map<string, AccountDomain>()
  /** Names registered elsewhere: not purchasable. */
  readonly taken = new Set<string>()
  /** Premium names and their prices (decimal USD). */
  readonly premium = new Map<string, { readonly purchase: number; readonly renewal: number }>()
  /** The price of a regular name, first year and renewal. */
  price = { purchase: 12.99, renewal: 14.99 }
  /** The card on file is declined: creates and renewals answer 402. */
  declinePayment = false
  /** Every create the account accepted (a second create of one name would be a double purchase). */
  readonly creates: Array<{ readonly domainName: string; readonly years: number; readonly body: unknown }> = []
  now: () => Date = () => new Date()

  /** Someone else registers the name, or a transfer away completes: the account no longer holds it. */
  transferOut(name: string): void {
    this.domains.delete(name)
    this.taken.add(name)
  }

  private quote(name: string) {
    return this.premium.get(name) ?? this.price
  }

  checkAvailability(body: unknown): Refusal | { results: Array<Record<string, unknown>> } {
    const names = (body as { domainNames?: unknown })?.domainNames
    if (!Array.isArray(names) || names.length === 0 || names.length > 50 || names.some((n) => typeof n !== "string")) {
      return { status: 400, message: "Invalid Argument", details: "domainNames must hold 1 to 50 names" }
    }
    return {
      results: (names as Array<string>).map((domainName) => {
        const [sld, ...rest] = domainName.split(".")
        const purchasable = !this.taken.has(domainName) && !this.domains.has(domainName)
        const quote = this.quote(domainName)
        return {
          domainName,
          sld,
          tld: rest.join("."),
          ...(purchasable
            ? {
                purchasable: true,
                purchasePrice: quote.purchase,
                purchaseType: "registration",
                renewalPrice: quote.renewal
              }
            : {}),
          ...(this.premium.has(domainName) ? { premium: true } : {})
        }
      })
    }
  }

  create(body: unknown): Refusal | { domain: Record<string, unknown>; order: number; totalPaid: number } {
    const input = body as {
      domain?: {
        domainName?: unknown
        contacts?: Record<string, Record<string, unknown>>
        nameservers?: unknown
        locked?: unknown
        autorenewEnabled?: unknown
      }
      purchasePrice?: unknown
      years?: unknown
    }
    const name = input?.domain?.domainName
    if (typeof name !== "string" || name === "") {
      return { status: 400, message: "Invalid Argument", details: "domain.domainName is required" }
    }
    const years = input.years ?? 1
    if (typeof years !== "number" || !Number.isInteger(years) || years < 1 || years > 10) {
      return { status: 400, message: "Invalid Argument", details: "years must be 1 to 10" }
    }
    for (const role of contactRoles) {
      const contact = input.domain?.contacts?.[role]
      for (const field of requiredContactFields) {
        const value = contact?.[field]
        if (typeof value !== "string" || value.trim() === "") {
          return { status: 422, message: "Invalid Contact", details: `contacts.${role}.${field} is required` }
        }
      }
      if (!/^\+\d{1,3}\.\d{4,20}$/.test(String(contact?.phone))) {
        return { status: 422, message: "Invalid Contact", details: `contacts.${role}.phone must be +CC.NUMBER` }
      }
    }
    if (this.taken.has(name) || this.domains.has(name)) {
      return { status: 409, message: "Domain Not Available", details: `${name} is not available` }
    }
    const quote = this.quote(name)
    const total = Math.round(quote.purchase * years * 100) / 100
    if (this.premium.has(name) && input.purchasePrice !== total && input.purchasePrice !== quote.purchase) {
      return { status: 400, message: "Invalid Argument", details: "purchasePrice must match the premium price" }
    }
    if (this.declinePayment) return { status: 402, message: "Payment Required", details: "the card was declined" }
    const now = this.now()
    const domain: AccountDomain = {
      domainName: name,
      nameservers: Array.isArray(input.domain?.nameservers) ? (input.domain.nameservers as Array<string>) : [],
      locked: input.domain?.locked === true,
      autorenewEnabled: input.domain?.autorenewEnabled === true,
      createDate: stamp(now),
      expireDate: stamp(yearsLater(now, years)),
      renewalPrice: quote.renewal,
      authCode: `Auth-${Math.random().toString(36).slice(2, 12)}`
    }
    this.domains.set(name, domain)
    this.creates.push({ domainName: name, years, body })
    return { domain: this.view(domain), order: this.creates.length, totalPaid: total }
  }

  /** The Domain object as GetDomain answers it (false booleans left out). */
  view(domain: AccountDomain): Record<string, unknown> {
    return {
      domainName: domain.domainName,
      nameservers: domain.nameservers,
      ...(domain.locked ? { locked: true } : {}),
      ...(domain.autorenewEnabled ? { autorenewEnabled: true } : {}),
      expireDate: domain.expireDate,
      createDate: domain.createDate,
      renewalPrice: domain.renewalPrice
    }
  }

  get(name: string): Refusal | Record<string, unknown> {
    const domain = this.domains.get(name)
    return domain === undefined ? { status: 404, message: "Not Found" } : this.view(domain)
  }

  list(
    page: number,
    perPage: number
  ): { domains: Array<Record<string, unknown>>; nextPage?: number; lastPage?: number } {
    const all = [...this.domains.values()].sort((a, b) => (a.domainName < b.domainName ? -1 : 1))
    const last = Math.max(1, Math.ceil(all.length / perPage))
    const slice = all.slice((page - 1) * perPage, page * perPage).map((domain) => {
      const { nameservers: _, renewalPrice: __, ...rest } = this.view(domain)
      return rest
    })
    return page < last ? { domains: slice, nextPage: page + 1, lastPage: last } : { domains: slice }
  }

  renew(name: string, body: unknown): Refusal | { domain: Record<string, unknown>; order: number; totalPaid: number } {
    const domain = this.domains.get(name)
    if (domain === undefined) return { status: 404, message: "Not Found" }
    const years = (body as { years?: unknown })?.years ?? 1
    if (typeof years !== "number" || !Number.isInteger(years) || years < 1 || years > 10) {
      return { status: 400, message: "Invalid Argument", details: "years must be 1 to 10" }
    }
    if (this.declinePayment) return { status: 402, message: "Payment Required", details: "the card was declined" }
    domain.expireDate = stamp(yearsLater(new Date(domain.expireDate), years))
    return { domain: this.view(domain), order: 0, totalPaid: Math.round(domain.renewalPrice * years * 100) / 100 }
  }

  /** `:lock`, `:unlock`, `:enableAutorenew`, `:disableAutorenew`, `:setNameservers`. */
  action(name: string, verb: string, body: unknown): Refusal | Record<string, unknown> {
    const domain = this.domains.get(name)
    if (domain === undefined) return { status: 404, message: "Not Found" }
    switch (verb) {
      case "lock":
      case "unlock":
        domain.locked = verb === "lock"
        break
      case "enableAutorenew":
      case "disableAutorenew":
        domain.autorenewEnabled = verb === "enableAutorenew"
        break
      case "setNameservers": {
        const nameservers = (body as { nameservers?: unknown })?.nameservers
        if (!Array.isArray(nameservers) || nameservers.some((ns) => typeof ns !== "string")) {
          return { status: 400, message: "Invalid Argument", details: "nameservers must be a list of names" }
        }
        domain.nameservers = nameservers as Array<string>
        break
      }
      default:
        return { status: 404, message: "Not Found" }
    }
    return this.view(domain)
  }

  authCode(name: string): Refusal | { authCode: string } {
    const domain = this.domains.get(name)
    return domain === undefined ? { status: 404, message: "Not Found" } : { authCode: domain.authCode }
  }
}
