import { Result } from "effect"
import { BadRequest } from "../errors/Errors.ts"
import { canonicalHost } from "../kernel/HostName.ts"

/** The rrset types the API manages (decisions.md part 10); anything else is 400. */
export const rrsetTypes = ["A", "AAAA", "CNAME", "MX", "TXT", "SRV", "CAA", "NS", "PTR"] as const
export type RrsetType = (typeof rrsetTypes)[number]

/** Types only the system writes: the apex SOA and NS. */
export const managedTypes: ReadonlyArray<string> = ["SOA", "NS"]

export const minTtl = 60
export const maxTtl = 86400
export const defaultTtl = 300

/** The longest TXT character-string (RFC 1035 3.3). */
export const maxCharacterString = 255

const maxRdata = 65535
const labelPattern = /^[a-z0-9_-]{1,63}$/

/** Why one record was refused: 400 `bad_request` with the record and the reason in `details`. */
const shapeError = (record: string, reason: string): BadRequest =>
  new BadRequest({ message: `record ${JSON.stringify(record)}: ${reason}`, details: { record, reason } })

/** A name's labels are LDH or underscore, 1..63 each, at most 253 characters in all (without the final dot). */
const validName = (name: string): boolean =>
  name.length > 0 && name.length <= 253 && name.split(".").every((label) => labelPattern.test(label))

/** Lower-cases and IDNA-encodes one name (relative or absolute), keeping a trailing dot. */
const asciiName = (name: string): string => {
  const lowered = name.toLowerCase()
  if (/^[\x00-\x7f]*$/.test(lowered)) return lowered
  const absolute = lowered.endsWith(".")
  const converted = canonicalHost(lowered)
  return absolute ? `${converted}.` : converted
}

/**
 * An owner name of the zone from a path: `@` (or the zone itself) for the apex, else relative to the zone, lower-cased
 * and IDNA-encoded; a leftmost `*` label is a wildcard. Answers the relative name (`@`, `www`, `*.dev`).
 */
export const parseOwner = (zone: string, input: string): Result.Result<string, BadRequest> => {
  const name = asciiName(input.trim())
  if (name === "@" || name === `${zone}.`) return Result.succeed("@")
  const relative = name.endsWith(`.${zone}.`) ? name.slice(0, -(zone.length + 2)) : name
  const labels = relative.split(".")
  const plain = labels[0] === "*" ? labels.slice(1) : labels
  const full = `${relative}.${zone}`
  if (relative.endsWith(".") || (plain.length > 0 && !validName(plain.join("."))) || full.length > 253) {
    return Result.fail(
      new BadRequest({
        message: `rrset name ${JSON.stringify(input)} is not a name in zone ${zone}: use @ for the apex or a relative name (a leftmost * is a wildcard)`,
        details: { name: input }
      })
    )
  }
  return Result.succeed(relative)
}

/** The absolute name (with a trailing dot) of a relative owner. */
export const absoluteOwner = (zone: string, relative: string): string =>
  relative === "@" ? `${zone}.` : `${relative}.${zone}.`

/** `{type}` of a path: upper-case (lower-case accepted); only the API's types. */
export const parseType = (input: string): Result.Result<RrsetType, BadRequest> => {
  const type = input.toUpperCase()
  return (rrsetTypes as ReadonlyArray<string>).includes(type)
    ? Result.succeed(type as RrsetType)
    : Result.fail(
        new BadRequest({
          message: `type ${JSON.stringify(input)} is not supported: use one of ${rrsetTypes.join(", ")}`,
          details: { type: input }
        })
      )
}

/** A name inside RDATA: `@` is the apex, a name without a trailing dot is relative to the zone; answered absolute. */
const rdataName = (zone: string, token: string, options: { readonly root?: boolean } = {}): string | undefined => {
  if (token === "@") return `${zone}.`
  if (token === ".") return options.root === true ? "." : undefined
  const name = asciiName(token)
  const absolute = name.endsWith(".") ? name : `${name}.${zone}.`
  return validName(absolute.slice(0, -1)) ? absolute : undefined
}

const uint = (token: string | undefined, max: number): number | undefined => {
  if (token === undefined || !/^\d{1,10}$/.test(token)) return undefined
  const value = Number(token)
  return value <= max ? value : undefined
}

/** Dotted-quad IPv4 without leading zeros. */
export const parseIpv4 = (text: string): Array<number> | undefined => {
  const parts = text.split(".")
  if (parts.length !== 4) return undefined
  const bytes = parts.map((part) => (/^(0|[1-9]\d{0,2})$/.test(part) ? Number(part) : 256))
  return bytes.every((byte) => byte <= 255) ? bytes : undefined
}

/** IPv6 text (with an optional embedded IPv4 tail) as eight 16-bit groups. */
export const parseIpv6 = (input: string): Array<number> | undefined => {
  let text = input
  const lastColon = text.lastIndexOf(":")
  if (text.slice(lastColon + 1).includes(".")) {
    const v4 = parseIpv4(text.slice(lastColon + 1))
    if (v4 === undefined) return undefined
    text = `${text.slice(0, lastColon + 1)}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`
  }
  if (!/^[0-9a-fA-F:]+$/.test(text) || text.split("::").length > 2) return undefined
  const groups = (part: string) => (part === "" ? [] : part.split(":"))
  const [head, rest] = text.includes("::") ? text.split("::") : [text, undefined]
  const left = groups(head ?? "")
  const right = rest === undefined ? [] : groups(rest)
  if ([...left, ...right].some((group) => !/^[0-9a-fA-F]{1,4}$/.test(group))) return undefined
  const missing = 8 - left.length - right.length
  if (rest === undefined ? missing !== 0 : missing < 1) return undefined
  return [
    ...left.map((group) => parseInt(group, 16)),
    ...Array<number>(rest === undefined ? 0 : missing).fill(0),
    ...right.map((group) => parseInt(group, 16))
  ]
}

/** RFC 5952 text of eight groups: lower-case, the longest run of two or more zero groups as `::`. */
export const formatIpv6 = (groups: ReadonlyArray<number>): string => {
  let best = -1
  let bestLength = 1
  for (let start = 0; start < 8;) {
    let end = start
    while (end < 8 && groups[end] === 0) end++
    if (end - start > bestLength) {
      best = start
      bestLength = end - start
    }
    start = end === start ? start + 1 : end
  }
  const hex = groups.map((group) => group.toString(16))
  if (best < 0) return hex.join(":")
  return `${hex.slice(0, best).join(":")}::${hex.slice(best + bestLength).join(":")}`
}

/**
 * The character-strings of zone-file text: quoted strings (with `\"`, `\\` and `\DDD` escapes) separated by spaces,
 * or bare text taken whole as one string. Answered as bytes; undefined when a quote is not closed.
 */
export const parseCharacterStrings = (text: string): Array<Uint8Array> | undefined => {
  const trimmed = text.trim()
  if (!trimmed.startsWith('"')) return [new TextEncoder().encode(trimmed)]
  const strings: Array<Uint8Array> = []
  let index = 0
  while (index < trimmed.length) {
    if (trimmed[index] === " " || trimmed[index] === "\t") {
      index++
      continue
    }
    if (trimmed[index] !== '"') return undefined
    index++
    const bytes: Array<number> = []
    let closed = false
    while (index < trimmed.length) {
      const char = trimmed[index]!
      if (char === '"') {
        closed = true
        index++
        break
      }
      if (char === "\\") {
        const digits = /^\d{3}/.exec(trimmed.slice(index + 1))
        if (digits !== null) {
          const value = Number(digits[0])
          if (value > 255) return undefined
          bytes.push(value)
          index += 4
          continue
        }
        if (index + 1 >= trimmed.length) return undefined
        index++
      }
      const codePoint = trimmed.codePointAt(index)!
      const encoded = new TextEncoder().encode(String.fromCodePoint(codePoint))
      bytes.push(...encoded)
      index += codePoint > 0xffff ? 2 : 1
    }
    if (!closed) return undefined
    strings.push(Uint8Array.from(bytes))
  }
  return strings
}

/**
 * The most an rrset's records may take in DNS wire form (each record's owner name, type, class, TTL, length and
 * RDATA): the rrset is answered in one DNS message (at most 65535 bytes over TCP), beside its signature, a CNAME
 * chain or glue, so a quarter of the message is left for it.
 */
export const maxRrsetWireBytes = 16384

/** The uncompressed wire length of an absolute name (`.` is the root). */
const nameWireLength = (name: string): number =>
  name === "."
    ? 1
    : name
        .replace(/\.$/, "")
        .split(".")
        .reduce((total, label) => total + label.length + 1, 1)

/** The RDATA length of one record in its stored form (see `normalizeRecord`). */
const rdataLength = (type: RrsetType, record: string): number => {
  const parts = tokens(record)
  switch (type) {
    case "A":
      return 4
    case "AAAA":
      return 16
    case "CNAME":
    case "NS":
    case "PTR":
      return nameWireLength(parts[0]!)
    case "MX":
      return 2 + nameWireLength(parts[1]!)
    case "SRV":
      return 6 + nameWireLength(parts[3]!)
    case "CAA": {
      const match = /^\s*\d+\s+(\S+)\s+(.+?)\s*$/.exec(record)
      return 2 + (match?.[1]?.length ?? 0) + (parseCharacterStrings(match?.[2] ?? "")?.[0]?.length ?? 0)
    }
    case "TXT":
      return (parseCharacterStrings(record) ?? []).reduce((total, chunk) => total + chunk.length + 1, 0)
  }
}

/** The wire length of an rrset of stored records at `owner` (absolute, with its trailing dot). */
export const rrsetWireLength = (owner: string, type: RrsetType, records: ReadonlyArray<string>): number =>
  records.reduce((total, record) => total + nameWireLength(owner) + 10 + rdataLength(type, record), 0)

/** One character-string in zone-file form: quoted, `"` and `\` escaped, bytes outside printable ASCII as `\DDD`. */
export const quoteCharacterString = (bytes: Uint8Array): string => {
  let out = '"'
  for (const byte of bytes) {
    if (byte === 0x22 || byte === 0x5c) out += `\\${String.fromCharCode(byte)}`
    else if (byte < 0x20 || byte > 0x7e) out += `\\${byte.toString().padStart(3, "0")}`
    else out += String.fromCharCode(byte)
  }
  return `${out}"`
}

/** Splits every string over 255 bytes into 255-byte chunks (spec part 8), keeping the bytes in order. */
export const chunkStrings = (strings: ReadonlyArray<Uint8Array>): Array<Uint8Array> =>
  strings.flatMap((bytes) => {
    if (bytes.length <= maxCharacterString) return [bytes]
    const chunks: Array<Uint8Array> = []
    for (let offset = 0; offset < bytes.length; offset += maxCharacterString) {
      chunks.push(bytes.subarray(offset, offset + maxCharacterString))
    }
    return chunks
  })

const tokens = (text: string): Array<string> =>
  text
    .trim()
    .split(/\s+/)
    .filter((token) => token !== "")

/**
 * One record's RDATA in the stored form: checked for the type's shape (400 `bad_request` with the record and reason
 * in `details`), names absolute and lower-case, addresses in their canonical text, TXT as quoted strings of at most
 * 255 bytes.
 */
export const normalizeRecord = (zone: string, type: RrsetType, record: string): Result.Result<string, BadRequest> => {
  const fail = (reason: string) => Result.fail(shapeError(record, reason))
  const parts = tokens(record)
  const name = (token: string | undefined, root = false) =>
    token === undefined ? undefined : rdataName(zone, token, { root })
  switch (type) {
    case "A": {
      const bytes = parts.length === 1 ? parseIpv4(parts[0]!) : undefined
      return bytes === undefined
        ? fail("an A record is one IPv4 address such as 192.0.2.1")
        : Result.succeed(bytes.join("."))
    }
    case "AAAA": {
      const groups = parts.length === 1 ? parseIpv6(parts[0]!) : undefined
      return groups === undefined
        ? fail("an AAAA record is one IPv6 address such as 2001:db8::1")
        : Result.succeed(formatIpv6(groups))
    }
    case "CNAME":
    case "NS":
    case "PTR": {
      const target = parts.length === 1 ? name(parts[0]) : undefined
      return target === undefined
        ? fail(`a ${type} record is one domain name (relative to the zone, or absolute with a trailing dot)`)
        : Result.succeed(target)
    }
    case "MX": {
      const preference = uint(parts[0], 65535)
      const exchange = parts.length === 2 ? name(parts[1], true) : undefined
      return preference === undefined || exchange === undefined
        ? fail("an MX record is a preference (0..65535) and a mail server name, such as 10 mail.example.com.")
        : Result.succeed(`${preference} ${exchange}`)
    }
    case "SRV": {
      const [priority, weight, port] = [uint(parts[0], 65535), uint(parts[1], 65535), uint(parts[2], 65535)]
      const target = parts.length === 4 ? name(parts[3], true) : undefined
      return priority === undefined || weight === undefined || port === undefined || target === undefined
        ? fail(
            "an SRV record is priority, weight and port (each 0..65535) and a target name, such as 10 5 443 host.example.com."
          )
        : Result.succeed(`${priority} ${weight} ${port} ${target}`)
    }
    case "CAA": {
      const match = /^\s*(\d{1,3})\s+([A-Za-z0-9]{1,15})\s+(.+?)\s*$/.exec(record)
      const flags = uint(match?.[1], 255)
      const value = match === null ? undefined : parseCharacterStrings(match[3]!)
      if (match === null || flags === undefined || value === undefined || value.length !== 1) {
        return fail('a CAA record is flags (0..255), a tag and one value, such as 0 issue "letsencrypt.org"')
      }
      const tag = match[2]!.toLowerCase()
      if (["issue", "issuewild"].includes(tag) && !/^[\x21-\x7e]*(\s*;.*)?$/.test(new TextDecoder().decode(value[0]))) {
        return fail("the value of an issue or issuewild tag is a domain name, optionally followed by ; parameters")
      }
      return Result.succeed(`${flags} ${tag} ${quoteCharacterString(value[0]!)}`)
    }
    case "TXT": {
      const strings = parseCharacterStrings(record)
      if (strings === undefined)
        return fail('a TXT record is bare text or quoted strings ("part 1" "part 2") with closed quotes')
      const chunks = chunkStrings(strings)
      if (chunks.reduce((total, chunk) => total + chunk.length + 1, 0) > maxRdata) {
        return fail(`a TXT record holds at most ${maxRdata} bytes`)
      }
      return Result.succeed(chunks.map(quoteCharacterString).join(" "))
    }
  }
}
