import { Result, Schema } from "effect"

/** Who may open a deployment: anyone, members of the owning org, or holders of the project's shared password. */
export const AccessMode = Schema.Literals(["public", "org", "password"])
export type AccessMode = typeof AccessMode.Type

/** The shared project password: 8 to 200 characters, counted as Unicode code points, taken as typed (no trimming). */
export const AccessPassword = Schema.String.check(Schema.isBetweenCodePoints(8, 200))

/** `PUT .../access` body; leaving `password` out keeps the stored one (decisions.md part 4). */
export const SetAccessPolicyInput = Schema.Struct({
  mode: AccessMode,
  password: Schema.optionalKey(AccessPassword)
})
export type SetAccessPolicyInput = typeof SetAccessPolicyInput.Type

/** Longest `next` accepted by `POST /v1/access/authorize`. */
export const maxNextPathLength = 2048

const base = "http://next-path.invalid"

/** C0 and C1 controls and DEL: browsers drop tab and newlines from URLs, and CR/LF would split a header. */
const control = /[\u0000-\u001f\u007f-\u009f]/u

/** Controls, any whitespace, backslashes (browsers read `\` as `/`), zero-width and bidi marks. */
const unsafeRaw = /[\u0000-\u001f\u007f-\u009f\s\\\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/u

const startsAsPath = (value: string): boolean =>
  value.startsWith("/") && !value.startsWith("//") && !value.startsWith("/\\")

/** Resolving `.` and `..` segments keeps the value on the same origin and does not leave a path starting `//`. */
const staysPath = (value: string): boolean => {
  if (!URL.canParse(value, base)) return false
  const url = new URL(value, base)
  return url.origin === base && !url.pathname.startsWith("//")
}

/**
 * Whether `next` is a same-site path only, safe to redirect to after the access callback: it starts with exactly one
 * `/`, carries no scheme or host, no backslash, whitespace or control character, is valid percent-encoding, still
 * starts with a single `/` and holds no control character once percent-decoded, and does not resolve (after `.` and
 * `..` segments), raw or decoded, to a path beginning `//`. At most `maxNextPathLength` characters.
 */
export const safeNextPath = (next: string): boolean => {
  if (next.length === 0 || next.length > maxNextPathLength) return false
  if (!startsAsPath(next) || unsafeRaw.test(next)) return false
  const decoded = Result.try(() => decodeURIComponent(next))
  if (Result.isFailure(decoded)) return false
  const plain = decoded.success
  if (!startsAsPath(plain) || plain.includes("\\") || control.test(plain)) return false
  return staysPath(next) && staysPath(plain)
}

/** A `next` value that passes `safeNextPath`. */
export const NextPath = Schema.String.check(
  Schema.makeFilter((next: string) => safeNextPath(next) || "must be a path on the same site, starting with one /")
)
