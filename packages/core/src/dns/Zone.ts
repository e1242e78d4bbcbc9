import { Schema } from "effect"
import type { Sealed } from "../secrets/Sealer.ts"
import type { OrgId } from "../kernel/Ids.ts"

/** Zone DNSSEC states of spec part 3. */
export const DnssecState = Schema.Literals(["off", "signing", "ds_pending"])
export type DnssecState = typeof DnssecState.Type

/** The zone's one combined signing key (decisions.md part 8): ECDSA P-256, algorithm 13, flags 257. */
export interface ZoneKey {
  /** The PKCS #8 private key (base64), sealed like a secret. */
  readonly sealed: Sealed
  /** The 64-byte public key (x then y), base64: the DNSKEY's key field. */
  readonly publicKey: string
  readonly keyTag: number
  /** The SHA-256 DS of the key: `<keytag> 13 2 <hex>`. */
  readonly ds: string
}

/** A stored zone. The SOA and apex NS are not stored: they follow the serial and the service's name servers. */
export interface ZoneRow {
  /** Lower-case, punycode, no trailing dot; unique across all orgs. */
  readonly name: string
  readonly orgId: OrgId
  /** Rises with every change to what the zone serves. */
  readonly serial: number
  readonly dnssec: DnssecState
  /** Present while `dnssec` is not `off`. */
  readonly key: ZoneKey | null
  /** The DS list last recorded by `PUT dnssec/ds`. */
  readonly dsRecorded: ReadonlyArray<string>
  readonly createdAt: string
}

/** A stored rrset; `name` relative to the zone (`@` for the apex), `records` in the stored RDATA form. */
export interface RrsetRow {
  readonly name: string
  readonly type: string
  readonly ttl: number
  readonly records: ReadonlyArray<string>
  /** Kept by the service for a custom hostname in the org's own zone: `managed_by: system`, closed to users. */
  readonly managed?: boolean
}

/** A zone with every rrset it serves: what the name server loads. */
export interface ZoneContents {
  readonly zone: ZoneRow
  readonly rrsets: ReadonlyArray<RrsetRow>
}

export const ManagedBy = Schema.NullOr(Schema.Literal("system"))

/** RRset of decisions.md part 4: `managed_by` is `system` for the SOA and apex NS, else null. */
export const Rrset = Schema.Struct({
  name: Schema.String,
  type: Schema.String,
  ttl: Schema.Int,
  records: Schema.Array(Schema.String),
  managed_by: ManagedBy
})
export type Rrset = typeof Rrset.Type

/** Zone of decisions.md part 4; `dnskeys` and `ds` (the DS the server computed) are present while signing. */
export const Zone = Schema.Struct({
  name: Schema.String,
  dnssec: DnssecState,
  nameservers: Schema.Array(Schema.String),
  serial: Schema.Int,
  createdAt: Schema.String,
  dnskeys: Schema.optionalKey(Schema.Array(Schema.String)),
  ds: Schema.optionalKey(Schema.Array(Schema.String))
})
export type Zone = typeof Zone.Type

export const ZoneList = Schema.Struct({ items: Schema.Array(Zone) })

/** ZoneDetail: the zone with every rrset, the managed SOA and apex NS first. */
export const ZoneDetail = Schema.Struct({ ...Zone.fields, rrsets: Schema.Array(Rrset) })
export type ZoneDetail = typeof ZoneDetail.Type

export const CreateZoneInput = Schema.Struct({ name: Schema.String })

export const PutRrsetInput = Schema.Struct({
  records: Schema.Array(Schema.String),
  ttl: Schema.optionalKey(Schema.Int)
})
export type PutRrsetInput = typeof PutRrsetInput.Type

export const DnssecInput = Schema.Struct({ enabled: Schema.Boolean })

export const DsInput = Schema.Struct({ ds: Schema.Array(Schema.String) })

/** SOA timers of decisions.md part 10: refresh, retry, expire, minimum (the negative-caching TTL). */
export const soaTimers = { refresh: 3600, retry: 600, expire: 1209600, minimum: 300 } as const

/** TTL of the managed SOA and apex NS rrsets. */
export const managedTtl = 3600

const absolute = (name: string) => (name.endsWith(".") ? name : `${name}.`)

/** The SOA RDATA: primary = the first service name server, contact `hostmaster.<zone>.`. */
export const soaRecord = (zone: string, serial: number, nameservers: ReadonlyArray<string>): string =>
  `${absolute(nameservers[0] ?? `ns1.${zone}`)} hostmaster.${zone}. ${serial} ${soaTimers.refresh} ${soaTimers.retry} ${soaTimers.expire} ${soaTimers.minimum}`

/** The managed rrsets (SOA, apex NS) followed by the stored ones. */
export const servedRrsets = (
  zone: ZoneRow,
  stored: ReadonlyArray<RrsetRow>,
  nameservers: ReadonlyArray<string>
): ReadonlyArray<Rrset> => [
  {
    name: "@",
    type: "SOA",
    ttl: managedTtl,
    records: [soaRecord(zone.name, zone.serial, nameservers)],
    managed_by: "system"
  },
  { name: "@", type: "NS", ttl: managedTtl, records: nameservers.map(absolute), managed_by: "system" },
  ...stored.map(({ name, type, ttl, records, managed }) => ({
    name,
    type,
    ttl,
    records,
    managed_by: managed === true ? ("system" as const) : null
  }))
]

/** DNSKEY RDATA of the zone key: flags 257, protocol 3, algorithm 13. */
export const dnskeyRecord = (key: ZoneKey): string => `257 3 13 ${key.publicKey}`
