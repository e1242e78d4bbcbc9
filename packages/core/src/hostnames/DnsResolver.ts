import { Context, Effect, Option, Schema } from "effect"
import { canonicalHost } from "../kernel/HostName.ts"
import { HostedZones } from "./HostedZones.ts"
import type { VerificationRecord } from "./HostnameName.ts"
import type { OrgId } from "../kernel/Ids.ts"

/** What went wrong with a lookup: the name does not exist, it has no record of the type, or the resolver failed. */
export const DnsLookupReason = Schema.Literals(["nxdomain", "nodata", "timeout", "servfail", "refused", "network"])
export type DnsLookupReason = typeof DnsLookupReason.Type

/** A DNS lookup that produced no records; `reason` says whether that is an answer (nxdomain, nodata) or a failure. */
export class DnsLookupError extends Schema.TaggedError<DnsLookupError>()("DnsLookupError", {
  reason: DnsLookupReason,
  name: Schema.String,
  type: Schema.String,
  message: Schema.String
}) {}

/** A recursive DNS lookup as the public sees it, used to check that a customer controls a hostname. */
export class DnsResolver extends Context.Service<
  DnsResolver,
  {
    /** The TXT records of `name` (following a CNAME as DNS does), each record's strings joined; `nodata` when there are none. */
    readonly txt: (name: string) => Effect.Effect<ReadonlyArray<string>, DnsLookupError>
    /** The CNAME target of `name`, lowercase without the trailing dot; none when the name exists without a CNAME. */
    readonly cname: (name: string) => Effect.Effect<Option.Option<string>, DnsLookupError>
  }
>()("@hostplane/core/hostnames/DnsResolver") {}

/** How ownership of a custom hostname was proven (spec 4.4 verify). */
export type OwnershipMethod = "zone" | "txt" | "cname"

/** The outcome of one ownership check; `observed` is what DNS showed, for the hostname's `lastError`. */
export type OwnershipCheck =
  | { readonly verified: true; readonly method: OwnershipMethod }
  | { readonly verified: false; readonly observed: string }

export interface OwnershipInput {
  /** The normalized hostname. */
  readonly host: string
  /** The org of the project the hostname belongs to. */
  readonly orgId: OrgId
  /** The hostname's guidance record, as stored. */
  readonly verify: VerificationRecord
  /** The setting `SERVICE_FALLBACK_ORIGIN`. */
  readonly fallbackOrigin: string
}

const unquote = (value: string): string => value.trim().replace(/^"(.*)"$/, "$1")

const shown = (value: string): string => JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}...` : value)

const failure = (error: DnsLookupError, type: string): string => {
  switch (error.reason) {
    case "nxdomain":
      return "no such name (NXDOMAIN)"
    case "nodata":
      return type === "TXT" ? "no TXT record" : "none"
    case "timeout":
      return "lookup timed out"
    case "servfail":
      return "the resolver failed (SERVFAIL)"
    case "refused":
      return "the resolver refused the query (REFUSED)"
    case "network":
      return "the resolver could not be reached"
  }
}

const describeTxt = (values: ReadonlyArray<string>): string =>
  values.length === 0
    ? "no TXT record"
    : values.slice(0, 5).map(shown).join(", ") + (values.length > 5 ? ` and ${values.length - 5} more` : "")

const maxObserved = 1000

/**
 * Spec 4.4 verify: ownership holds when the host is in a zone the service hosts for the same org, when the TXT record
 * `verify.name` has `verify.value`, or when the host's CNAME points at the fallback origin (case and trailing dot
 * ignored). Never fails: a lookup error is part of what was observed.
 */
export const checkOwnership = Effect.fn("Hostnames.checkOwnership")(function* (
  input: OwnershipInput
): Effect.fn.Return<OwnershipCheck, never, DnsResolver | HostedZones> {
  const zones = yield* HostedZones
  const owner = yield* zones.ownerOrgOf(canonicalHost(input.host))
  if (Option.isSome(owner) && owner.value === input.orgId) return { verified: true, method: "zone" }

  const resolver = yield* DnsResolver
  const [txt, cname] = yield* Effect.all(
    [Effect.result(resolver.txt(input.verify.name)), Effect.result(resolver.cname(input.host))],
    { concurrency: "unbounded" }
  )
  const expected = input.verify.value
  if (txt._tag === "Success" && txt.success.some((value) => unquote(value) === expected)) {
    return { verified: true, method: "txt" }
  }
  const origin = canonicalHost(input.fallbackOrigin)
  if (cname._tag === "Success" && Option.isSome(cname.success) && canonicalHost(cname.success.value) === origin) {
    return { verified: true, method: "cname" }
  }

  const sawTxt = txt._tag === "Success" ? describeTxt(txt.success) : failure(txt.failure, "TXT")
  const sawCname =
    cname._tag === "Failure"
      ? failure(cname.failure, "CNAME")
      : Option.match(cname.success, { onNone: () => "none", onSome: (target) => target })
  const observed =
    `TXT ${input.verify.name}: ${sawTxt} (expected ${JSON.stringify(expected)}); ` +
    `CNAME ${input.host}: ${sawCname} (expected ${origin})`
  return {
    verified: false,
    observed: observed.length > maxObserved ? `${observed.slice(0, maxObserved - 3)}...` : observed
  }
})
