import { Effect, Redacted } from "effect"

/** ECDSA P-256 with SHA-256 (RFC 6605), the algorithm of decisions.md part 8. */
export const dnssecAlgorithm = 13

/** The one combined signing key has the SEP bit set: flags 257. */
export const dnskeyFlags = 257

/** A new zone key before sealing: the private half stays redacted until the sealer takes it. */
export interface NewZoneKey {
  /** PKCS #8 DER, base64. */
  readonly privateKey: Redacted.Redacted<string>
  /** The 64-byte public key (x then y), base64. */
  readonly publicKey: string
  readonly keyTag: number
  /** `<keytag> 13 2 <hex SHA-256 digest>`. */
  readonly ds: string
}

const base64 = (bytes: Uint8Array): string => {
  let binary = ""
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary)
}

const hex = (bytes: Uint8Array): string => [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("")

/** DNSKEY RDATA: flags, protocol 3, algorithm 13, key. */
export const dnskeyRdata = (publicKey: Uint8Array): Uint8Array =>
  Uint8Array.from([dnskeyFlags >> 8, dnskeyFlags & 0xff, 3, dnssecAlgorithm, ...publicKey])

/** RFC 4034 Appendix B: the key tag of DNSKEY RDATA. */
export const keyTagOf = (rdata: Uint8Array): number => {
  let sum = 0
  for (let index = 0; index < rdata.length; index++) sum += index & 1 ? rdata[index]! : rdata[index]! << 8
  sum += (sum >> 16) & 0xffff
  return sum & 0xffff
}

/** The canonical wire form of a zone name (lower-case labels, then the root). */
export const zoneNameWire = (zone: string): Uint8Array => {
  const bytes: Array<number> = []
  for (const label of zone
    .toLowerCase()
    .replace(/\.$/, "")
    .split(".")
    .filter((part) => part !== "")) {
    bytes.push(label.length, ...[...label].map((char) => char.charCodeAt(0)))
  }
  bytes.push(0)
  return Uint8Array.from(bytes)
}

/** The DS text of a public key (RFC 4509): SHA-256 over the owner name's wire form and the DNSKEY RDATA. */
export const dsOf = (zone: string, publicKey: Uint8Array) =>
  Effect.gen(function* () {
    const rdata = dnskeyRdata(publicKey)
    const keyTag = keyTagOf(rdata)
    const input = Uint8Array.from([...zoneNameWire(zone), ...rdata])
    const digest = new Uint8Array(yield* Effect.promise(() => globalThis.crypto.subtle.digest("SHA-256", input)))
    return { keyTag, ds: `${keyTag} ${dnssecAlgorithm} 2 ${hex(digest)}` }
  })

/** A fresh ECDSA P-256 key for `zone` (Web Crypto, so core needs no platform module). */
export const newZoneKey = (zone: string): Effect.Effect<NewZoneKey> =>
  Effect.gen(function* () {
    const pair = yield* Effect.promise(() =>
      globalThis.crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"])
    )
    const pkcs8 = new Uint8Array(
      yield* Effect.promise(() => globalThis.crypto.subtle.exportKey("pkcs8", pair.privateKey))
    )
    // The raw export is 0x04 || x || y; DNSKEY carries x || y (RFC 6605 4).
    const raw = new Uint8Array(
      yield* Effect.promise(() => globalThis.crypto.subtle.exportKey("raw", pair.publicKey))
    ).subarray(1)
    const { keyTag, ds } = yield* dsOf(zone, raw)
    return { privateKey: Redacted.make(base64(pkcs8)), publicKey: base64(raw), keyTag, ds }
  })
