import { chunkStrings, parseCharacterStrings, parseIpv4, parseIpv6 } from "@hostplane/core/dns/Records"

/**
 * DNS wire form of the records the name server serves (RFC 1035 3.2, RFC 4034). Names are written uncompressed and
 * lower-case, which is also their canonical form (RFC 4034 6.2), so the bytes a response carries are the bytes an
 * RRSIG signs. dns-packet decodes queries; answers are assembled from these precomputed records.
 */

export const typeCodes = {
  A: 1,
  NS: 2,
  CNAME: 5,
  SOA: 6,
  PTR: 12,
  MX: 15,
  TXT: 16,
  AAAA: 28,
  SRV: 33,
  OPT: 41,
  DS: 43,
  RRSIG: 46,
  NSEC: 47,
  DNSKEY: 48,
  CDS: 59,
  CDNSKEY: 60,
  IXFR: 251,
  AXFR: 252,
  ANY: 255,
  CAA: 257
} as const

export type TypeName = keyof typeof typeCodes

const namesByCode = new Map<number, string>(Object.entries(typeCodes).map(([name, code]) => [code, name]))

export const typeName = (code: number): string => namesByCode.get(code) ?? `TYPE${code}`

/** The labels of an absolute or relative name, lower-case, without the root. */
export const labelsOf = (name: string): Array<string> => {
  const trimmed = name.toLowerCase().replace(/\.$/, "")
  return trimmed === "" ? [] : trimmed.split(".")
}

/** The uncompressed wire form of a name (lower-case). */
export const nameWire = (name: string): Buffer => {
  const labels = labelsOf(name)
  const parts: Array<Buffer> = []
  for (const label of labels) {
    const bytes = Buffer.from(label, "latin1")
    parts.push(Buffer.from([bytes.length]), bytes)
  }
  parts.push(Buffer.from([0]))
  return Buffer.concat(parts)
}

/** The wire form of a name keeping its case: for the owner names of answers, which echo the question. */
export const nameWireAsIs = (name: string): Buffer => {
  const trimmed = name.replace(/\.$/, "")
  const parts: Array<Buffer> = []
  if (trimmed !== "") {
    for (const label of trimmed.split(".")) {
      const bytes = Buffer.from(label, "latin1")
      parts.push(Buffer.from([bytes.length]), bytes)
    }
  }
  parts.push(Buffer.from([0]))
  return Buffer.concat(parts)
}

const u16 = (value: number) => {
  const buffer = Buffer.alloc(2)
  buffer.writeUInt16BE(value)
  return buffer
}

const u32 = (value: number) => {
  const buffer = Buffer.alloc(4)
  buffer.writeUInt32BE(value >>> 0)
  return buffer
}

const characterStrings = (strings: ReadonlyArray<Uint8Array>): Buffer =>
  Buffer.concat(strings.flatMap((bytes) => [Buffer.from([bytes.length]), Buffer.from(bytes)]))

/** The RDATA of one record in the stored text form (`Records.normalizeRecord`'s output, or the managed SOA/NS). */
export const rdataOf = (type: string, text: string): Buffer => {
  const parts = text.trim().split(/\s+/)
  switch (type) {
    case "A":
      return Buffer.from(parseIpv4(text.trim()) ?? [0, 0, 0, 0])
    case "AAAA":
      return Buffer.concat((parseIpv6(text.trim()) ?? Array<number>(8).fill(0)).map(u16))
    case "NS":
    case "CNAME":
    case "PTR":
      return nameWire(parts[0] ?? ".")
    case "MX":
      return Buffer.concat([u16(Number(parts[0])), nameWire(parts[1] ?? ".")])
    case "SRV":
      return Buffer.concat([
        u16(Number(parts[0])),
        u16(Number(parts[1])),
        u16(Number(parts[2])),
        nameWire(parts[3] ?? ".")
      ])
    case "SOA":
      return Buffer.concat([
        nameWire(parts[0]!),
        nameWire(parts[1]!),
        ...parts.slice(2, 7).map((part) => u32(Number(part)))
      ])
    case "TXT":
      return characterStrings(chunkStrings(parseCharacterStrings(text) ?? []))
    case "CAA": {
      const match = /^\s*(\d+)\s+(\S+)\s+(.*)$/.exec(text)
      const value = parseCharacterStrings(match?.[3] ?? '""')?.[0] ?? new Uint8Array()
      const tag = Buffer.from(match?.[2] ?? "", "latin1")
      return Buffer.concat([Buffer.from([Number(match?.[1] ?? 0), tag.length]), tag, Buffer.from(value)])
    }
    default:
      throw new Error(`no wire form for ${type}`)
  }
}

/** DNSKEY (and CDNSKEY) RDATA: flags, protocol 3, algorithm, key. */
export const dnskeyRdata = (flags: number, algorithm: number, key: Buffer): Buffer =>
  Buffer.concat([u16(flags), Buffer.from([3, algorithm]), key])

/** DS (and CDS) RDATA. */
export const dsRdata = (keyTag: number, algorithm: number, digestType: number, digest: Buffer): Buffer =>
  Buffer.concat([u16(keyTag), Buffer.from([algorithm, digestType]), digest])

/** The NSEC type bitmap (RFC 4034 4.1.2) of a set of type codes. */
export const typeBitmap = (codes: Iterable<number>): Buffer => {
  const windows = new Map<number, Array<number>>()
  for (const code of codes) {
    const window = code >> 8
    const bits = windows.get(window) ?? []
    bits.push(code & 0xff)
    windows.set(window, bits)
  }
  const out: Array<Buffer> = []
  for (const window of [...windows.keys()].sort((a, b) => a - b)) {
    const bits = windows.get(window)!
    const length = (Math.max(...bits) >> 3) + 1
    const map = Buffer.alloc(length)
    for (const bit of bits) map[bit >> 3]! |= 0x80 >> (bit & 7)
    out.push(Buffer.from([window, length]), map)
  }
  return Buffer.concat(out)
}

/** The fields of an RRSIG before its signature (RFC 4034 3.1), which are also what the signature covers first. */
export interface RrsigFields {
  readonly typeCovered: number
  readonly algorithm: number
  readonly labels: number
  readonly originalTtl: number
  readonly expiration: number
  readonly inception: number
  readonly keyTag: number
  readonly signer: string
}

export const rrsigPrefix = (fields: RrsigFields): Buffer =>
  Buffer.concat([
    u16(fields.typeCovered),
    Buffer.from([fields.algorithm, fields.labels]),
    u32(fields.originalTtl),
    u32(fields.expiration),
    u32(fields.inception),
    u16(fields.keyTag),
    nameWire(fields.signer)
  ])

/** One resource record in wire form, its owner given as wire bytes. */
export const rrWire = (owner: Buffer, type: number, ttl: number, rdata: Buffer): Buffer =>
  Buffer.concat([owner, u16(type), u16(1), u32(ttl), u16(rdata.length), rdata])

/**
 * Canonical DNS name order (RFC 4034 6.1): compare labels from the right, each as lower-case bytes, a missing label
 * first.
 */
export const compareNames = (a: string, b: string): number => {
  const left = labelsOf(a).reverse()
  const right = labelsOf(b).reverse()
  for (let index = 0; index < Math.min(left.length, right.length); index++) {
    const order = Buffer.compare(Buffer.from(left[index]!, "latin1"), Buffer.from(right[index]!, "latin1"))
    if (order !== 0) return order
  }
  return left.length - right.length
}

/** The 12-byte header of a response. */
export const header = (
  id: number,
  flags: number,
  counts: { readonly qd: number; readonly an: number; readonly ns: number; readonly ar: number }
): Buffer => {
  const buffer = Buffer.alloc(12)
  buffer.writeUInt16BE(id, 0)
  buffer.writeUInt16BE(flags, 2)
  buffer.writeUInt16BE(counts.qd, 4)
  buffer.writeUInt16BE(counts.an, 6)
  buffer.writeUInt16BE(counts.ns, 8)
  buffer.writeUInt16BE(counts.ar, 10)
  return buffer
}

/** The question section entry of a name (as asked), type and class. */
export const questionWire = (name: string, type: number, klass: number): Buffer =>
  Buffer.concat([nameWireAsIs(name), u16(type), u16(klass)])

/** The OPT pseudo-record of a response (RFC 6891): our payload size, the DO bit echoed, an extended rcode. */
export const optWire = (payload: number, dnssecOk: boolean, extendedRcode = 0): Buffer =>
  Buffer.concat([
    Buffer.from([0]),
    u16(typeCodes.OPT),
    u16(payload),
    Buffer.from([extendedRcode, 0]),
    u16(dnssecOk ? 0x8000 : 0),
    u16(0)
  ])
