import { Context, Effect, Layer, type Option, type Redacted, Schema } from "effect"
import { portOff } from "../kernel/Port.ts"

/**
 * Why a registrar call failed: `payment_failed` (402 there), `rejected` (400 or 422: the values), `unavailable` (409:
 * not purchasable), `not_found` (404: the account does not hold the name), `error` (5xx, timeouts, a dropped connection
 * or an unreadable answer: a retry may help).
 */
export class RegistrarFailure extends Schema.TaggedError<RegistrarFailure>()("RegistrarFailure", {
  reason: Schema.Literals(["payment_failed", "rejected", "unavailable", "not_found", "error"]),
  message: Schema.String
}) {}

/** decisions.md part 7: 402 payment, 400 and 422 the values, 409 not available, 404 not in the account, else an error. */
export const registrarFailureReason = (status: number): RegistrarFailure["reason"] =>
  status === 402
    ? "payment_failed"
    : status === 400 || status === 422
      ? "rejected"
      : status === 409
        ? "unavailable"
        : status === 404
          ? "not_found"
          : "error"

/** One name as the registrar prices it; prices are integer US cents, first year and one renewal year. */
export interface RegistrarAvailability {
  readonly name: string
  readonly purchasable: boolean
  readonly premium: boolean
  readonly purchaseCents: number | null
  readonly renewalCents: number | null
}

/** A domain in the registrar account: the source of truth for expiry, lock and name servers. */
export interface RegistrarDomain {
  readonly name: string
  readonly nameservers: ReadonlyArray<string>
  readonly locked: boolean
  readonly autorenewEnabled: boolean
  readonly expiresAt: string | null
  readonly createdAt: string | null
  readonly renewalCents: number | null
}

/** The contact as the registrar takes it, copied to every role. */
export interface RegistrarContact {
  readonly firstName: string
  readonly lastName: string
  readonly companyName: string | null
  readonly address1: string
  readonly city: string
  readonly zip: string
  readonly country: string
  readonly phone: string
  readonly email: string
}

export interface RegistrarCreate {
  readonly name: string
  readonly years: number
  readonly contact: RegistrarContact
  readonly nameservers: ReadonlyArray<string>
  readonly locked: boolean
  readonly autorenew: boolean
  /** The price the availability check quoted, so a premium name is bought at that price or refused. */
  readonly purchaseCents: number | null
}

export interface RegistrarPage {
  readonly domains: ReadonlyArray<RegistrarDomain>
  readonly nextPage: number | null
}

/** The domain registrar (Name.com API v4 in production, `RegistrarMemory` in tests); absent means registration is off. */
export class Registrar extends Context.Service<
  Registrar,
  {
    readonly checkAvailability: (
      names: ReadonlyArray<string>
    ) => Effect.Effect<ReadonlyArray<RegistrarAvailability>, RegistrarFailure>
    readonly create: (input: RegistrarCreate) => Effect.Effect<RegistrarDomain, RegistrarFailure>
    /** None when the account does not hold the name (a 404): the sign of a finished transfer out. */
    readonly get: (name: string) => Effect.Effect<Option.Option<RegistrarDomain>, RegistrarFailure>
    readonly list: (page: number) => Effect.Effect<RegistrarPage, RegistrarFailure>
    readonly renew: (
      name: string,
      years: number,
      purchaseCents: number | null
    ) => Effect.Effect<RegistrarDomain, RegistrarFailure>
    readonly setLock: (name: string, locked: boolean) => Effect.Effect<RegistrarDomain, RegistrarFailure>
    readonly setAutorenew: (name: string, enabled: boolean) => Effect.Effect<RegistrarDomain, RegistrarFailure>
    readonly setNameservers: (
      name: string,
      nameservers: ReadonlyArray<string>
    ) => Effect.Effect<RegistrarDomain, RegistrarFailure>
    readonly authCode: (name: string) => Effect.Effect<Redacted.Redacted<string>, RegistrarFailure>
  }
>()("@hostplane/core/domains/Registrar") {
  /**
   * No registrar (`SERVICE_REGISTRAR_*` unset): checks, purchases, renewals, locks and auth codes answer 503
   * `registrar_not_configured` before any call, and the daily sync does nothing.
   */
  static readonly off: Layer.Layer<Registrar> = Layer.sync(Registrar, () => {
    const refuse = () => Effect.fail(new RegistrarFailure({ reason: "error", message: "no registrar is configured" }))
    return portOff({
      checkAvailability: refuse,
      create: refuse,
      get: refuse,
      list: refuse,
      renew: refuse,
      setLock: refuse,
      setAutorenew: refuse,
      setNameservers: refuse,
      authCode: refuse
    })
  })
}

/** Exact cents of a decimal USD amount as the registrar writes it (`8.29` gives 829), never through a float product. */
export const centsOf = (usd: number | string): number => {
  const text = typeof usd === "number" ? String(usd) : usd.trim()
  const match = /^(\d+)(?:\.(\d*))?$/.exec(text)
  if (match === null) return Math.round(Number(text) * 100)
  const fraction = (match[2] ?? "").padEnd(3, "0")
  const cents = Number(match[1]) * 100 + Number(fraction.slice(0, 2))
  return Number(fraction[2]) >= 5 ? cents + 1 : cents
}

/** The decimal USD amount of integer cents (829 gives 8.29). */
export const usdOf = (cents: number): number =>
  Number(`${Math.trunc(cents / 100)}.${String(cents % 100).padStart(2, "0")}`)
