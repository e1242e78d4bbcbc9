import { Effect, Result, Schema } from "effect"
import { BadRequest } from "../errors/Errors.ts"
import { canonicalHost } from "../kernel/HostName.ts"
import type { SettingsShape } from "../kernel/Settings.ts"
import type { HostnamesConfigShape } from "./HostnamesConfig.ts"

/** Why a custom hostname was refused; carried as `details.reason` of the 400 `bad_request`. */
export type HostnameProblem =
  | "empty"
  | "wildcard"
  | "ip_address"
  | "invalid_character"
  | "invalid_idn"
  | "empty_label"
  | "single_label"
  | "label_too_long"
  | "name_too_long"
  | "hyphen"
  | "numeric_tld"
  | "service_domain"

/** The settings a hostname is checked against: the app domain, the service's other own domains and the fallback origin. */
export type HostnameSettings = Pick<SettingsShape, "appDomain" | "serviceDomains"> &
  Pick<HostnamesConfigShape, "fallbackOrigin">

/** The owner name of the ownership TXT record is this label under the hostname. */
export const verificationLabel = "_service-verify"

/** The TXT value is this prefix followed by the hostname's random token. */
export const verificationPrefix = "service-verify="

/** The guidance record of a custom hostname (`verify` of decisions.md part 4): the TXT record that proves ownership. */
export const VerificationRecord = Schema.Struct({
  type: Schema.Literal("TXT"),
  name: Schema.String,
  value: Schema.String
})
export type VerificationRecord = typeof VerificationRecord.Type

/** `{ type: "TXT", name: "_service-verify.<host>", value: "service-verify=<token>" }`; the token is random per hostname and not secret. */
export const verificationRecord = (host: string, token: string): VerificationRecord => ({
  type: "TXT",
  name: `${verificationLabel}.${host}`,
  value: `${verificationPrefix}${token}`
})

const maxInput = 1024
const maxName = 253
const maxLabel = 63

const refuse = (input: string, reason: HostnameProblem, why: string): Result.Result<never, BadRequest> =>
  Result.fail(
    new BadRequest({
      message: `Hostname ${JSON.stringify(input.length > 80 ? `${input.slice(0, 80)}...` : input)} ${why}`,
      details: { reason }
    })
  )

/** ASCII outside letters, digits, hyphen and dot; non-ASCII is left to IDNA. */
const badAscii = /[\u0000-\u002c\u002f\u003a-\u0040\u005b-\u0060\u007b-\u007f]/
const ipv6Like = /^\[?[0-9a-f]*:[0-9a-f]*:[0-9a-f:.]*\]?$/i
const numericLabel = /^(?:\d+|0x[0-9a-f]*)$/i
const ldh = /^[a-z0-9-]+$/

/**
 * A custom hostname in the one form stored and routed: lowercase ASCII with IDN labels in punycode (`bücher.example`
 * gives `xn--bcher-kva.example`), no trailing dot. Refused with 400 `bad_request` (`details.reason` a
 * `HostnameProblem`): wildcards, IP addresses, single labels, labels over 63 or names over 253 characters, characters
 * outside letters, digits and hyphens, labels that start or end with a hyphen, and names equal to or under one of the
 * service's own domains or its fallback origin.
 */
export const normalizeHostnameResult = (
  input: string,
  settings: HostnameSettings
): Result.Result<string, BadRequest> => {
  const trimmed = input.trim()
  if (trimmed === "" || trimmed === ".") return refuse(input, "empty", "is empty")
  if (trimmed.length > maxInput) return refuse(input, "name_too_long", `is longer than ${maxName} characters`)
  if (trimmed.includes("*")) {
    return refuse(input, "wildcard", "is a wildcard; wildcard hostnames are not supported, add each name on its own")
  }
  if (ipv6Like.test(trimmed)) {
    return refuse(input, "ip_address", "is an IP address; a custom hostname must be a domain name")
  }
  const bad = badAscii.exec(trimmed)
  if (bad !== null) {
    return refuse(
      input,
      "invalid_character",
      `contains ${JSON.stringify(bad[0])}; only letters, digits, hyphens and dots are allowed`
    )
  }
  const labels = trimmed.replace(/\.$/, "").split(".")
  if (numericLabel.test(labels[labels.length - 1] ?? "")) {
    return labels.every((label) => numericLabel.test(label))
      ? refuse(input, "ip_address", "is an IP address; a custom hostname must be a domain name")
      : refuse(input, "numeric_tld", "ends in an all-numeric label, which no top-level domain is")
  }
  if (!URL.canParse(`http://${trimmed}`)) {
    return refuse(
      input,
      "invalid_idn",
      "is not a valid domain name (an internationalized or punycode label is invalid)"
    )
  }
  const name = canonicalHost(trimmed)
  if (name.length > maxName) return refuse(input, "name_too_long", `is longer than ${maxName} characters`)
  const parts = name.split(".")
  if (parts.some((label) => label === "")) return refuse(input, "empty_label", "has an empty label (two dots in a row)")
  if (parts.length < 2) {
    return refuse(input, "single_label", "has a single label; use a fully qualified name such as www.example.com")
  }
  if (/^\d+$/.test(parts[parts.length - 1] ?? "")) {
    return refuse(input, "ip_address", "is an IP address; a custom hostname must be a domain name")
  }
  for (const label of parts) {
    if (label.length > maxLabel) {
      return refuse(input, "label_too_long", `has a label longer than ${maxLabel} characters`)
    }
    if (!ldh.test(label)) {
      return refuse(input, "invalid_character", "contains characters other than letters, digits and hyphens")
    }
    if (label.startsWith("-") || label.endsWith("-")) {
      return refuse(input, "hyphen", `has a label that starts or ends with a hyphen (${JSON.stringify(label)})`)
    }
  }
  const taken = [settings.appDomain, ...settings.serviceDomains, settings.fallbackOrigin]
    .map(canonicalHost)
    .filter((domain) => domain !== "" && (name === domain || name.endsWith(`.${domain}`)))
    .sort((a, b) => b.length - a.length)[0]
  if (taken !== undefined) {
    return refuse(
      input,
      "service_domain",
      name === taken
        ? "is one of the service's own domains"
        : `is under ${taken}, one of the service's own domains; only names of domains you own can be added`
    )
  }
  return Result.succeed(name)
}

/** `normalizeHostnameResult` as an effect, for services: `const name = yield* normalizeHostname(body.name, settings)`. */
export const normalizeHostname = (input: string, settings: HostnameSettings): Effect.Effect<string, BadRequest> =>
  Effect.fromResult(normalizeHostnameResult(input, settings))
