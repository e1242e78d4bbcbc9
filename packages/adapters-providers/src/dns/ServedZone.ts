import { absoluteOwner } from "@hostplane/core/dns/Records"
import { managedTtl, soaRecord, soaTimers, type ZoneContents } from "@hostplane/core/dns/Zone"
import type * as Crypto from "node:crypto"
import { algorithm, describeKey, signRrset } from "./Dnssec.ts"
import {
  compareNames,
  dnskeyRdata,
  labelsOf,
  nameWire,
  rdataOf,
  rrsigPrefix,
  rrWire,
  typeBitmap,
  typeCodes
} from "./Wire.ts"

/** One rrset as served: every record and its RRSIG already in wire form. */
export interface ServedRrset {
  readonly owner: string
  readonly type: number
  readonly ttl: number
  readonly rdatas: ReadonlyArray<Buffer>
  /** The records in wire form under `owner`. */
  readonly wire: ReadonlyArray<Buffer>
  /** The RRSIG RDATA while signed (none for delegation NS and glue). */
  readonly rrsig: Buffer | undefined
}

/** The key a signed zone is served with, opened. */
export interface OpenedKey {
  readonly privateKey: Crypto.KeyObject
  readonly publicKey: Buffer
}

/** Signature validity: an hour back (clock skew), 14 days ahead; zones are signed again well before expiry. */
export const signatureLead = 3600
export const signatureLife = 14 * 24 * 3600

const lowerName = (name: string): string => name.toLowerCase().replace(/\.$/, "")

const isUnder = (name: string, parent: string): boolean => name.endsWith(`.${parent}`)

const parentOf = (name: string): string => name.slice(name.indexOf(".") + 1)

/** The labels an RRSIG counts: the owner's, without a leading wildcard label (RFC 4034 3.1.3). */
const rrsigLabels = (owner: string): number => {
  const labels = labelsOf(owner)
  return labels[0] === "*" ? labels.length - 1 : labels.length
}

/** An RRSIG RR in wire form for `owner` (a wildcard's signature under the name it answers for). */
export const rrsigWire = (owner: Buffer, rrset: ServedRrset): Buffer | undefined =>
  rrset.rrsig === undefined ? undefined : rrWire(owner, typeCodes.RRSIG, rrset.ttl, rrset.rrsig)

/** The records of an rrset under another owner: wildcard synthesis. */
export const rrsetAs = (rrset: ServedRrset, owner: string): ReadonlyArray<Buffer> => {
  const wire = nameWire(owner)
  return rrset.rdatas.map((rdata) => rrWire(wire, rrset.type, rrset.ttl, rdata))
}

/**
 * A zone as the name server holds it in memory: every name with its rrsets in wire form, the empty non-terminals,
 * the delegations, and while signing the DNSKEY, CDS and CDNSKEY rrsets, an NSEC chain over the authoritative names
 * and an RRSIG on every authoritative rrset (RFC 4035 2). Built once per change; queries only read it.
 */
export class ServedZone {
  readonly name: string
  readonly serial: number
  readonly signed: boolean
  readonly nodes = new Map<string, Map<number, ServedRrset>>()
  /** Every name that exists: the names with rrsets and the empty non-terminals between them and the apex. */
  readonly existing = new Set<string>()
  readonly delegations = new Set<string>()
  /** The authoritative names in canonical order, the NSEC chain's order. */
  readonly chain: ReadonlyArray<string>
  readonly soa: ServedRrset
  /** The SOA as negative answers carry it: its TTL lowered to the SOA minimum (RFC 2308 3). */
  readonly negativeSoa: ServedRrset
  readonly expires: number

  constructor(contents: ZoneContents, nameservers: ReadonlyArray<string>, key: OpenedKey | undefined, now: number) {
    const zone = contents.zone
    this.name = zone.name
    this.serial = zone.serial
    this.signed = key !== undefined
    const inception = now - signatureLead
    this.expires = now + signatureLife
    const keyInfo = key === undefined ? undefined : describeKey(zone.name, key.publicKey)

    const raw = new Map<string, Map<number, { ttl: number; rdatas: Array<Buffer> }>>()
    const add = (owner: string, type: number, ttl: number, rdatas: ReadonlyArray<Buffer>) => {
      const byType = raw.get(owner) ?? new Map<number, { ttl: number; rdatas: Array<Buffer> }>()
      byType.set(type, { ttl, rdatas: [...rdatas] })
      raw.set(owner, byType)
    }
    const soaText = soaRecord(zone.name, zone.serial, nameservers)
    add(zone.name, typeCodes.SOA, managedTtl, [rdataOf("SOA", soaText)])
    add(
      zone.name,
      typeCodes.NS,
      managedTtl,
      nameservers.map((ns) => rdataOf("NS", `${lowerName(ns)}.`))
    )
    for (const rrset of contents.rrsets) {
      const code = typeCodes[rrset.type as keyof typeof typeCodes]
      if (code === undefined) continue
      const owner = lowerName(absoluteOwner(zone.name, rrset.name))
      add(
        owner,
        code,
        rrset.ttl,
        rrset.records.map((record) => rdataOf(rrset.type, record))
      )
    }
    if (keyInfo !== undefined) {
      const dnskey = dnskeyRdata(257, algorithm, key!.publicKey)
      add(zone.name, typeCodes.DNSKEY, managedTtl, [dnskey])
      add(zone.name, typeCodes.CDNSKEY, managedTtl, [dnskey])
      add(zone.name, typeCodes.CDS, managedTtl, [keyInfo.cds])
    }

    for (const owner of raw.keys()) {
      if (owner !== zone.name && raw.get(owner)!.has(typeCodes.NS)) this.delegations.add(owner)
    }
    const occluded = (owner: string) => [...this.delegations].some((cut) => isUnder(owner, cut))
    for (const owner of raw.keys()) {
      for (let name = owner; name === zone.name || isUnder(name, zone.name); name = parentOf(name)) {
        this.existing.add(name)
        if (name === zone.name) break
      }
    }
    const authoritative = [...raw.keys()].filter((owner) => !occluded(owner)).sort(compareNames)
    this.chain = authoritative
    const negativeTtl = Math.min(soaTimers.minimum, managedTtl)
    if (keyInfo !== undefined) {
      authoritative.forEach((owner, index) => {
        const types = [...raw.get(owner)!.keys()].filter(
          (type) => !this.delegations.has(owner) || type === typeCodes.NS || type === typeCodes.DS
        )
        const next = authoritative[(index + 1) % authoritative.length]!
        add(owner, typeCodes.NSEC, negativeTtl, [
          Buffer.concat([nameWire(next), typeBitmap([...types, typeCodes.RRSIG, typeCodes.NSEC])])
        ])
      })
    }

    for (const [owner, byType] of raw) {
      const ownerWire = nameWire(owner)
      const served = new Map<number, ServedRrset>()
      const glue = occluded(owner)
      for (const [type, { ttl, rdatas }] of byType) {
        // Delegation NS and glue are not the zone's own data (RFC 4035 2.2): left unsigned.
        const unsigned = glue || (this.delegations.has(owner) && type !== typeCodes.NSEC && type !== typeCodes.DS)
        let rrsig: Buffer | undefined
        if (key !== undefined && keyInfo !== undefined && !unsigned) {
          const fields = {
            typeCovered: type,
            algorithm,
            labels: rrsigLabels(owner),
            originalTtl: ttl,
            expiration: this.expires,
            inception,
            keyTag: keyInfo.keyTag,
            signer: zone.name
          }
          rrsig = Buffer.concat([rrsigPrefix(fields), signRrset(key.privateKey, fields, ownerWire, rdatas)])
        }
        served.set(type, {
          owner,
          type,
          ttl,
          rdatas,
          wire: rdatas.map((rdata) => rrWire(ownerWire, type, ttl, rdata)),
          rrsig
        })
      }
      this.nodes.set(owner, served)
    }
    this.soa = this.nodes.get(zone.name)!.get(typeCodes.SOA)!
    this.negativeSoa = {
      ...this.soa,
      ttl: negativeTtl,
      wire: this.soa.rdatas.map((rdata) => rrWire(nameWire(zone.name), typeCodes.SOA, negativeTtl, rdata))
    }
  }

  /** The NSEC rrset whose owner is `name`, or the one that covers it (the last chain name before it). */
  coveringNsec(name: string): ServedRrset | undefined {
    if (!this.signed) return undefined
    let low = 0
    let high = this.chain.length - 1
    let found = 0
    while (low <= high) {
      const middle = (low + high) >> 1
      if (compareNames(this.chain[middle]!, name) <= 0) {
        found = middle
        low = middle + 1
      } else high = middle - 1
    }
    return this.nodes.get(this.chain[found]!)?.get(typeCodes.NSEC)
  }

  /** Every record of the zone for AXFR: the SOA first, every other rrset with its RRSIG, the SOA again last. */
  transfer(): Array<Buffer> {
    const records: Array<Buffer> = []
    const push = (rrset: ServedRrset) => {
      records.push(...rrset.wire)
      const sig = rrsigWire(nameWire(rrset.owner), rrset)
      if (sig !== undefined) records.push(sig)
    }
    push(this.soa)
    for (const owner of [...this.nodes.keys()].sort(compareNames)) {
      for (const rrset of this.nodes.get(owner)!.values()) if (rrset !== this.soa) push(rrset)
    }
    records.push(...this.soa.wire)
    return records
  }
}
