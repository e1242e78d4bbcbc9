import { rrsetAs, rrsigWire, type ServedRrset, type ServedZone } from "./ServedZone.ts"
import { nameWire, typeCodes } from "./Wire.ts"

export const rcodes = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const

/** The sections of one authoritative answer, in wire form. */
export interface Answer {
  readonly rcode: number
  /** False for a referral: the answer comes from below a zone cut. */
  readonly authoritative: boolean
  readonly answer: ReadonlyArray<Buffer>
  readonly authority: ReadonlyArray<Buffer>
  readonly additional: ReadonlyArray<Buffer>
}

const maxChase = 8

const isUnder = (name: string, parent: string): boolean => name.endsWith(`.${parent}`)

const parentOf = (name: string): string => name.slice(name.indexOf(".") + 1)

/**
 * Answers one question from a zone (RFC 1034 4.3.2 with RFC 4592 wildcards and RFC 4035 3.1 proofs): the rrset, a
 * CNAME chain within the zone, a referral at a delegation, NODATA (empty non-terminals included) or NXDOMAIN with the
 * SOA; with `dnssec` the RRSIGs and the NSEC records that prove a denial or a wildcard expansion.
 */
export const answerFrom = (zone: ServedZone, qname: string, qtype: number, dnssec: boolean): Answer => {
  const answer: Array<Buffer> = []
  const authority: Array<Buffer> = []
  const additional: Array<Buffer> = []
  const proofs = new Set<ServedRrset>()

  const withSig = (rrset: ServedRrset, owner: string, into: Array<Buffer>) => {
    into.push(...(owner === rrset.owner ? rrset.wire : rrsetAs(rrset, owner)))
    if (dnssec) {
      const sig = rrsigWire(nameWire(owner), rrset)
      if (sig !== undefined) into.push(sig)
    }
  }
  const prove = (nsec: ServedRrset | undefined) => {
    if (dnssec && nsec !== undefined) proofs.add(nsec)
  }
  const negative = (rcode: number): Answer => {
    withSig(zone.negativeSoa, zone.name, authority)
    for (const nsec of proofs) withSig(nsec, nsec.owner, authority)
    return { rcode, authoritative: true, answer, authority, additional }
  }
  const positive = (): Answer => {
    for (const nsec of proofs) withSig(nsec, nsec.owner, authority)
    return { rcode: rcodes.NOERROR, authoritative: true, answer, authority, additional }
  }

  let name = qname
  for (let hop = 0; hop <= maxChase; hop++) {
    // A delegation between the apex and the name: a referral, or for DS at the cut the parent's own answer.
    let cut: string | undefined
    for (let above = name; above !== zone.name && isUnder(above, zone.name); above = parentOf(above)) {
      if (zone.delegations.has(above)) cut = above
    }
    if (cut !== undefined && !(cut === name && qtype === typeCodes.DS)) {
      if (hop > 0) return positive()
      const ns = zone.nodes.get(cut)!.get(typeCodes.NS)!
      authority.push(...ns.wire)
      if (dnssec) {
        const nsec = zone.nodes.get(cut)!.get(typeCodes.NSEC)
        if (nsec !== undefined) withSig(nsec, cut, authority)
      }
      for (const target of ns.rdatas.map((rdata) => nameOf(rdata))) {
        const glue = zone.nodes.get(target)
        if (glue === undefined) continue
        for (const type of [typeCodes.A, typeCodes.AAAA]) additional.push(...(glue.get(type)?.wire ?? []))
      }
      return { rcode: rcodes.NOERROR, authoritative: false, answer, authority, additional }
    }

    let node = zone.nodes.get(name)
    if (node === undefined) {
      if (zone.existing.has(name)) {
        // An empty non-terminal: the name exists without data; the NSEC before it proves that.
        prove(zone.coveringNsec(name))
        return negative(rcodes.NOERROR)
      }
      let encloser = parentOf(name)
      while (!zone.existing.has(encloser) && encloser !== zone.name) encloser = parentOf(encloser)
      const wildcard = `*.${encloser}`
      const source = zone.nodes.get(wildcard)
      prove(zone.coveringNsec(name))
      if (source === undefined) {
        prove(zone.coveringNsec(wildcard))
        return negative(rcodes.NXDOMAIN)
      }
      node = source
    }

    const exact = qtype === typeCodes.ANY ? undefined : node.get(qtype)
    if (qtype === typeCodes.ANY) {
      for (const rrset of node.values()) if (rrset.type !== typeCodes.NSEC) withSig(rrset, name, answer)
      return positive()
    }
    if (exact !== undefined) {
      withSig(exact, name, answer)
      return positive()
    }
    const alias = node.get(typeCodes.CNAME)
    if (alias !== undefined) {
      withSig(alias, name, answer)
      const target = nameOf(alias.rdatas[0]!)
      if (target !== zone.name && !isUnder(target, zone.name)) return positive()
      name = target
      continue
    }
    prove(node.get(typeCodes.NSEC))
    return negative(rcodes.NOERROR)
  }
  return positive()
}

/** The name an NS, CNAME or PTR RDATA holds, lower-case without the trailing dot. */
const nameOf = (rdata: Buffer): string => {
  const labels: Array<string> = []
  for (let offset = 0; offset < rdata.length && rdata[offset] !== 0; offset += rdata[offset]! + 1) {
    labels.push(rdata.subarray(offset + 1, offset + 1 + rdata[offset]!).toString("latin1"))
  }
  return labels.join(".")
}
