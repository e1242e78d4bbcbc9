import { Option, Schema, SchemaTransformation } from "effect"

const plainAscii = /^[a-z0-9._-]*$/
const urlSafe = /^[^\s/\\?#@:[\]%]+$/
const routable = /^[a-z0-9.-]+$/

/**
 * The one form every hostname is stored, compared and routed in: no surrounding space, lower-case, no trailing dot,
 * IDN labels in punycode (`Bücher.example.` gives `xn--bcher-kva.example`). Total: input that IDNA cannot convert
 * comes back only lower-cased, for `isHostName` (or `HostName`) to refuse.
 */
export const canonicalHost = (input: string): string => {
  const lowered = input.trim().toLowerCase().replace(/\.$/, "")
  if (plainAscii.test(lowered) || !urlSafe.test(lowered) || !URL.canParse(`http://${lowered}`)) return lowered
  return new URL(`http://${lowered}`).hostname.replace(/\.$/, "")
}

/** A canonical name a browser can route: letters, digits, hyphens and dots only. */
export const isHostName = (name: string): boolean => routable.test(name)

/** `canonicalHost` of the input when that is a routable host name. */
export const parseHost = (input: string): Option.Option<string> => {
  const name = canonicalHost(input)
  return isHostName(name) ? Option.some(name) : Option.none()
}

/** A string decoded to its canonical host name (`canonicalHost`); refused when that is not a routable name. */
export const HostName = Schema.String.pipe(
  Schema.decodeTo(
    Schema.String.check(Schema.isPattern(routable, { message: "expected a host name" })),
    SchemaTransformation.transform({ decode: canonicalHost, encode: (name) => name })
  )
)
