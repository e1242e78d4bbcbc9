import * as Crypto from "node:crypto"
import { dnskeyRdata, dsRdata, nameWire, rrsigPrefix, type RrsigFields } from "./Wire.ts"

/** ECDSA P-256 with SHA-256 (RFC 6605), the one algorithm decisions.md part 8 names. */
export const algorithm = 13

/** A zone signing key that is also the key signing key (decisions.md: one combined key, flags 257). */
export const keyFlags = 257

/** RFC 4034 Appendix B: the key tag of DNSKEY RDATA. */
export const keyTagOf = (rdata: Buffer): number => {
  let sum = 0
  for (let index = 0; index < rdata.length; index++) sum += index & 1 ? rdata[index]! : rdata[index]! << 8
  sum += (sum >> 16) & 0xffff
  return sum & 0xffff
}

/** The SHA-256 digest of a DS (RFC 4509): owner name in canonical wire form, then the DNSKEY RDATA. */
export const dsDigest = (zone: string, dnskey: Buffer): Buffer =>
  Crypto.createHash("sha256").update(nameWire(zone)).update(dnskey).digest()

/** The 64-byte public key (x then y) of an EC P-256 key. */
export const rawPublicKey = (key: Crypto.KeyObject): Buffer => {
  const jwk = key.export({ format: "jwk" })
  return Buffer.concat([Buffer.from(jwk.x ?? "", "base64url"), Buffer.from(jwk.y ?? "", "base64url")])
}

/** DNSKEY RDATA, key tag and DS text of a public key. */
export const describeKey = (zone: string, publicKey: Buffer) => {
  const dnskey = dnskeyRdata(keyFlags, algorithm, publicKey)
  const keyTag = keyTagOf(dnskey)
  const digest = dsDigest(zone, dnskey)
  return {
    dnskey,
    keyTag,
    digest,
    ds: `${keyTag} ${algorithm} 2 ${digest.toString("hex")}`,
    cds: dsRdata(keyTag, algorithm, 2, digest)
  }
}

/** Signs `data` as RFC 6605 wants it: the raw 64-byte r || s. */
export const signWith = (privateKey: Crypto.KeyObject, data: Buffer): Buffer =>
  Crypto.sign("sha256", data, { key: privateKey, dsaEncoding: "ieee-p1363" })

/**
 * The signature of an rrset (RFC 4034 3.1.8.1): the RRSIG fields, then each record as owner | type | class |
 * original TTL | RDLENGTH | RDATA, the records ordered by their canonical RDATA.
 */
export const signRrset = (
  privateKey: Crypto.KeyObject,
  fields: RrsigFields,
  owner: Buffer,
  rdatas: ReadonlyArray<Buffer>
): Buffer => {
  const head = Buffer.alloc(8)
  head.writeUInt16BE(fields.typeCovered, 0)
  head.writeUInt16BE(1, 2)
  head.writeUInt32BE(fields.originalTtl, 4)
  const sorted = [...rdatas].sort(Buffer.compare)
  const records = sorted.map((rdata) => {
    const length = Buffer.alloc(2)
    length.writeUInt16BE(rdata.length)
    return Buffer.concat([owner, head, length, rdata])
  })
  return signWith(privateKey, Buffer.concat([rrsigPrefix(fields), ...records]))
}

/** The private key of a stored PKCS #8 (base64). */
export const privateKeyOf = (pkcs8: string): Crypto.KeyObject =>
  Crypto.createPrivateKey({ key: Buffer.from(pkcs8, "base64"), format: "der", type: "pkcs8" })
