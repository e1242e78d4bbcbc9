import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  sign,
  X509Certificate
} from "node:crypto"
import * as Net from "node:net"

/**
 * X.509 certificates for the node's PostgreSQL clusters, built with `node:crypto` alone: a DER encoder for the few
 * ASN.1 types a certificate uses, ECDSA P-256 keys and `ecdsa-with-SHA256` signatures. A certificate authority per
 * node signs one server certificate per cluster, whose subject alternative names are the hosts clients are told to
 * connect to, so `sslmode=verify-full` with the authority's certificate checks both the chain and the host.
 */

export interface KeyAndCertificate {
  /** PKCS #8 PEM. */
  readonly key: string
  /** X.509 PEM. */
  readonly certificate: string
}

// DER: tag, length, contents.
const tlv = (tag: number, contents: Uint8Array): Buffer => {
  const length = contents.length
  const header =
    length < 0x80
      ? [tag, length]
      : length < 0x100
        ? [tag, 0x81, length]
        : length < 0x10000
          ? [tag, 0x82, length >> 8, length & 0xff]
          : [tag, 0x83, length >> 16, (length >> 8) & 0xff, length & 0xff]
  return Buffer.concat([Buffer.from(header), contents])
}
const sequence = (...items: ReadonlyArray<Uint8Array>) => tlv(0x30, Buffer.concat(items))
const set = (...items: ReadonlyArray<Uint8Array>) => tlv(0x31, Buffer.concat(items))
const explicit = (n: number, inner: Uint8Array) => tlv(0xa0 + n, inner)
const octets = (bytes: Uint8Array) => tlv(0x04, bytes)
const bits = (bytes: Uint8Array, unused = 0) => tlv(0x03, Buffer.concat([Buffer.from([unused]), bytes]))
const boolean = (value: boolean) => tlv(0x01, Buffer.from([value ? 0xff : 0x00]))
const utf8 = (text: string) => tlv(0x0c, Buffer.from(text, "utf8"))

/** A non-negative INTEGER from big-endian bytes: no redundant leading zero, one added when the top bit is set. */
const unsigned = (bytes: Uint8Array): Buffer => {
  let start = 0
  while (start < bytes.length - 1 && bytes[start] === 0) start++
  const trimmed = Buffer.from(bytes.subarray(start))
  return tlv(0x02, (trimmed[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed)
}

const oid = (dotted: string): Buffer => {
  const [first = 0, second = 0, ...rest] = dotted.split(".").map(Number)
  const body: Array<number> = [first * 40 + second]
  for (const arc of rest) {
    const groups: Array<number> = [arc & 0x7f]
    for (let value = Math.floor(arc / 128); value > 0; value = Math.floor(value / 128))
      groups.unshift((value & 0x7f) | 0x80)
    body.push(...groups)
  }
  return tlv(0x06, Buffer.from(body))
}

/** RFC 5280: UTCTime through 2049, GeneralizedTime from 2050. */
const time = (at: Date): Buffer => {
  const iso = at.toISOString()
  const digits = iso.slice(0, 19).replace(/[-:T]/g, "")
  return at.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(`${digits.slice(2)}Z`))
    : tlv(0x18, Buffer.from(`${digits}Z`))
}

const ids = {
  commonName: "2.5.4.3",
  ecdsaWithSha256: "1.2.840.10045.4.3.2",
  subjectKeyIdentifier: "2.5.29.14",
  keyUsage: "2.5.29.15",
  subjectAltName: "2.5.29.17",
  basicConstraints: "2.5.29.19",
  authorityKeyIdentifier: "2.5.29.35",
  extKeyUsage: "2.5.29.37",
  serverAuth: "1.3.6.1.5.5.7.3.1"
}

const name = (commonName: string) => sequence(set(sequence(oid(ids.commonName), utf8(commonName))))
const extension = (id: string, critical: boolean, value: Uint8Array) =>
  critical ? sequence(oid(id), boolean(true), octets(value)) : sequence(oid(id), octets(value))

/** RFC 7093 method 1: the leftmost 160 bits of the SHA-256 of the subject public key info. */
const keyIdentifier = (spki: Uint8Array) => createHash("sha256").update(spki).digest().subarray(0, 20)

/** A subject alternative name: an `iPAddress` for an address, else a `dNSName`. */
const generalName = (host: string): Buffer => {
  if (Net.isIPv4(host)) return tlv(0x87, Buffer.from(host.split(".").map(Number)))
  if (Net.isIPv6(host)) {
    const [head = "", tail = ""] = host.split("::")
    const words = (part: string) => (part === "" ? [] : part.split(":").map((word) => Number.parseInt(word, 16)))
    const front = words(head)
    const back = host.includes("::") ? words(tail) : []
    const all = [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back]
    return tlv(0x87, Buffer.from(all.flatMap((word) => [word >> 8, word & 0xff])))
  }
  return tlv(0x82, Buffer.from(host.toLowerCase(), "ascii"))
}

const newKey = () => generateKeyPairSync("ec", { namedCurve: "prime256v1" })

const pem = (label: string, der: Uint8Array) =>
  `-----BEGIN ${label}-----\n${(
    Buffer.from(der)
      .toString("base64")
      .match(/.{1,64}/g) ?? []
  ).join("\n")}\n-----END ${label}-----\n`

interface Issue {
  readonly subject: string
  readonly spki: Buffer
  readonly issuer: string
  readonly issuerSpki: Buffer
  readonly issuerKey: ReturnType<typeof createPrivateKey>
  readonly days: number
  readonly extensions: ReadonlyArray<Buffer>
}

const issue = (input: Issue): string => {
  const now = Date.now()
  const algorithm = sequence(oid(ids.ecdsaWithSha256))
  const tbs = sequence(
    explicit(0, unsigned(Buffer.from([2]))),
    // A positive serial of at most 20 bytes, unpredictable (CA/B forum asks for 64 bits of randomness).
    unsigned(Buffer.concat([Buffer.from([0x01]), randomBytes(15)])),
    algorithm,
    name(input.issuer),
    // An hour back for clocks that run behind.
    sequence(time(new Date(now - 3_600_000)), time(new Date(now + input.days * 86_400_000))),
    name(input.subject),
    input.spki,
    explicit(
      3,
      sequence(
        extension(ids.subjectKeyIdentifier, false, octets(keyIdentifier(input.spki))),
        extension(ids.authorityKeyIdentifier, false, sequence(tlv(0x80, keyIdentifier(input.issuerSpki)))),
        ...input.extensions
      )
    )
  )
  const signature = sign("sha256", tbs, { key: input.issuerKey, dsaEncoding: "der" })
  return pem("CERTIFICATE", sequence(tbs, algorithm, bits(signature)))
}

/** A certificate authority (10 years): it signs the clusters' server certificates and nothing else. */
export const makeAuthority = (commonName: string): KeyAndCertificate => {
  const { privateKey, publicKey } = newKey()
  const spki = publicKey.export({ type: "spki", format: "der" })
  const certificate = issue({
    subject: commonName,
    spki,
    issuer: commonName,
    issuerSpki: spki,
    issuerKey: privateKey,
    days: 3650,
    extensions: [
      extension(ids.basicConstraints, true, sequence(boolean(true), unsigned(Buffer.from([0])))),
      // keyCertSign and cRLSign (bits 5 and 6).
      extension(ids.keyUsage, true, bits(Buffer.from([0x06]), 1))
    ]
  })
  return { key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(), certificate }
}

/** A server certificate signed by `authority` for `hosts` (names or addresses), valid `days` days. */
export const issueServer = (
  authority: KeyAndCertificate,
  commonName: string,
  hosts: ReadonlyArray<string>,
  days = 397
): KeyAndCertificate => {
  const { privateKey, publicKey } = newKey()
  const issuerKey = createPrivateKey(authority.key)
  const issuerCertificate = new X509Certificate(authority.certificate)
  const certificate = issue({
    subject: commonName,
    spki: publicKey.export({ type: "spki", format: "der" }),
    issuer: issuerCertificate.subject.replace(/^CN=/, ""),
    issuerSpki: createPublicKey(issuerKey).export({ type: "spki", format: "der" }),
    issuerKey,
    days,
    extensions: [
      extension(ids.basicConstraints, true, sequence()),
      // digitalSignature (bit 0).
      extension(ids.keyUsage, true, bits(Buffer.from([0x80]), 7)),
      extension(ids.extKeyUsage, false, sequence(oid(ids.serverAuth))),
      extension(ids.subjectAltName, false, sequence(...[...new Set(hosts)].map(generalName)))
    ]
  })
  return { key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(), certificate }
}

/** Whether the PEM key is the private half of the PEM certificate's public key. */
export const matches = (key: string, certificate: string): boolean => {
  try {
    const fromKey = createPublicKey(createPrivateKey(key)).export({ type: "spki", format: "der" })
    const fromCertificate = new X509Certificate(certificate).publicKey.export({ type: "spki", format: "der" })
    return Buffer.compare(fromKey, fromCertificate) === 0
  } catch {
    return false
  }
}

/**
 * Whether a server key and certificate may be kept: the key matches, the authority signed it, it names every host,
 * and it is valid for at least `marginDays` more days.
 */
export const stillGood = (
  key: string,
  server: string,
  authority: string,
  hosts: ReadonlyArray<string>,
  marginDays = 30
): boolean => {
  try {
    if (!matches(key, server)) return false
    const certificate = new X509Certificate(server)
    if (!certificate.verify(new X509Certificate(authority).publicKey)) return false
    if (Date.parse(certificate.validTo) - Date.now() < marginDays * 86_400_000) return false
    return hosts.every((host) =>
      Net.isIP(host) === 0 ? certificate.checkHost(host) !== undefined : certificate.checkIP(host) !== undefined
    )
  } catch {
    return false
  }
}
