import { Duration, Schema } from "effect"
import type { Sealed } from "../secrets/Sealer.ts"

/** A hostname's certificate as clients see it (decisions.md part 16). */
export const TlsStatus = Schema.Literals(["none", "pending", "issued", "failed"])
export type TlsStatus = typeof TlsStatus.Type

export const HostnameTls = Schema.Struct({
  /** `none`: no static certificate covers the name and ACME is off. */
  status: TlsStatus,
  /** When the certificate served for the name expires; null until there is one. */
  expiresAt: Schema.NullOr(Schema.String),
  /** The CA's problem detail (or why the CA could not be reached) for the last failed attempt; null otherwise. */
  lastError: Schema.NullOr(Schema.String)
})
export type HostnameTls = typeof HostnameTls.Type

/**
 * One hostname's certificate row: what is served (`chain`, its sealed `key`, `expiresAt`) and the attempt under way
 * or last made. A renewal keeps serving the old certificate until the new one replaces it.
 */
export interface CertificateRow {
  readonly name: string
  readonly status: "pending" | "issued" | "failed"
  /** PEM chain, leaf first; null before the first issuance. */
  readonly chain: string | null
  readonly key: Sealed | null
  readonly expiresAt: string | null
  /** The ACME order in flight and the sealed key its CSR is made with, so a job resumed after a crash continues it. */
  readonly orderUrl: string | null
  readonly orderKey: Sealed | null
  readonly lastError: string | null
  /** Failed attempts in a row, for the backoff. */
  readonly failures: number
  /** When the next attempt is due after a failure; null when none waits. */
  readonly retryAt: string | null
  readonly updatedAt: string
}

/** A served certificate as every replica's listener loads it. */
export interface ServedRow {
  readonly name: string
  readonly chain: string
  readonly key: Sealed
  readonly expiresAt: string
}

/** The service's ACME account: its sealed key and, once registered, its URL at the CA. */
export interface AccountRow {
  readonly key: Sealed
  readonly url: string | null
}

/** Renewal starts this long before a certificate expires. */
export const renewBefore = Duration.days(30)

/** The wait after the `failures`-th failure in a row: `first` doubling, at most a day. */
export const retryDelay = (failures: number, first: Duration.Duration): Duration.Duration =>
  Duration.millis(
    Math.min(Duration.toMillis(first) * 2 ** Math.max(failures - 1, 0), Duration.toMillis(Duration.days(1)))
  )

/** The additional authenticated data of sealed TLS keys, so a sealed key opens only in its own place. */
export const keyContext = (name: string) => `tls/${name}`
export const accountContext = "tls/account"
