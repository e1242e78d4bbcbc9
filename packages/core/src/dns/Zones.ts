import { Context, Effect, Layer, Option, Redacted, Result } from "effect"
import {
  BadRequest,
  CnameConflict,
  DnsNotConfigured,
  DnssecOff,
  type Forbidden,
  ManagedRrset,
  NotFound,
  ZoneTaken
} from "../errors/Errors.ts"
import { normalizeHostnameResult } from "../hostnames/HostnameName.ts"
import { HostnamesConfig } from "../hostnames/HostnamesConfig.ts"
import type { Actor } from "../kernel/Actor.ts"
import { canonicalHost } from "../kernel/HostName.ts"
import type { OrgId } from "../kernel/Ids.ts"
import { audited, Mutation, unaudited } from "../kernel/Mutation.ts"
import { Policy } from "../kernel/Policy.ts"
import { Settings } from "../kernel/Settings.ts"
import type { HoldingCounter } from "../orgs/OrgHooks.ts"
import { Sealer } from "../secrets/Sealer.ts"
import { DnsConfig, dnsEnabled } from "./DnsConfig.ts"
import { newZoneKey } from "./ZoneKeys.ts"
import {
  absoluteOwner,
  defaultTtl,
  managedTypes,
  maxRrsetWireBytes,
  maxTtl,
  minTtl,
  normalizeRecord,
  parseOwner,
  parseType,
  rrsetWireLength,
  type RrsetType
} from "./Records.ts"
import {
  dnskeyRecord,
  type PutRrsetInput,
  type Rrset,
  type RrsetRow,
  servedRrsets,
  type Zone,
  type ZoneDetail,
  type ZoneKey,
  type ZoneRow
} from "./Zone.ts"
import { ZoneStore } from "./ZoneStore.ts"
import { zoneRules } from "./ZoneRules.ts"

/** The sealing context of a zone's private key, so a sealed key opens only as that zone's key. */
export const zoneKeyContext = (zone: string): string => `dnssec/${zone}`

const dsPattern = /^(\d{1,5}) (\d{1,3}) (\d{1,3}) ([0-9a-fA-F]{2,256})$/

/**
 * DNS zones of spec 4.14 (decisions.md part 10): zones unique across orgs, rrsets checked at save, the serial raised
 * by every change to what the zone serves, DNSSEC states of part 3. Other areas (domains) create zones through
 * `ensureZone` inside their own write.
 */
export class Zones extends Context.Service<
  Zones,
  {
    readonly list: (
      actor: Actor,
      orgSlug: string
    ) => Effect.Effect<ReadonlyArray<Zone>, NotFound | Forbidden | DnsNotConfigured>
    /** Idempotent: the org's existing zone answers unchanged (and unaudited). */
    readonly create: (
      actor: Actor,
      orgSlug: string,
      name: string
    ) => Effect.Effect<ZoneDetail, NotFound | Forbidden | BadRequest | DnsNotConfigured | ZoneTaken>
    readonly get: (
      actor: Actor,
      orgSlug: string,
      zone: string
    ) => Effect.Effect<ZoneDetail, NotFound | Forbidden | DnsNotConfigured>
    readonly remove: (
      actor: Actor,
      orgSlug: string,
      zone: string
    ) => Effect.Effect<void, NotFound | Forbidden | DnsNotConfigured>
    readonly putRrset: (
      actor: Actor,
      orgSlug: string,
      zone: string,
      name: string,
      type: string,
      input: PutRrsetInput
    ) => Effect.Effect<Rrset, NotFound | Forbidden | BadRequest | DnsNotConfigured | ManagedRrset | CnameConflict>
    readonly removeRrset: (
      actor: Actor,
      orgSlug: string,
      zone: string,
      name: string,
      type: string
    ) => Effect.Effect<void, NotFound | Forbidden | BadRequest | DnsNotConfigured | ManagedRrset>
    /** Enabling makes a key synchronously; enabling again changes nothing; disabling drops the key and recorded DS. */
    readonly setDnssec: (
      actor: Actor,
      orgSlug: string,
      zone: string,
      enabled: boolean
    ) => Effect.Effect<Zone, NotFound | Forbidden | DnsNotConfigured>
    readonly putDs: (
      actor: Actor,
      orgSlug: string,
      zone: string,
      ds: ReadonlyArray<string>
    ) => Effect.Effect<Zone, NotFound | Forbidden | BadRequest | DnsNotConfigured | DnssecOff>
    /** 503 `dns_not_configured` when the deployment's DNS is off (`SERVICE_DNS_LISTEN=off`). */
    readonly requireEnabled: Effect.Effect<void, DnsNotConfigured>
    /**
     * For another area's write (a domain import or purchase), inside its transaction and org lock: the org's zone of
     * `name`, created when missing (no audit row of its own); 409 `zone_taken` when another org holds it, a parent
     * or a child of it.
     */
    readonly ensureZone: (
      orgId: OrgId,
      name: string,
      at: string
    ) => Effect.Effect<ZoneDetail, BadRequest | DnsNotConfigured | ZoneTaken>
    /** The service's name servers, as zones list them. */
    readonly nameservers: ReadonlyArray<string>
  }
>()("@hostplane/core/dns/Zones") {
  static readonly layer = Layer.effect(
    Zones,
    Effect.gen(function* () {
      const store = yield* ZoneStore
      const policy = yield* Policy
      const mutation = yield* Mutation
      const sealer = yield* Sealer
      const config = yield* DnsConfig
      const settings = { ...(yield* Settings), ...(yield* HostnamesConfig) }
      const nameservers = settings.dnsNameservers.map(canonicalHost)

      const requireEnabled = dnsEnabled(config)
        ? Effect.void
        : Effect.fail(new DnsNotConfigured({ message: "DNS is not configured on this deployment" }))

      const view = (row: ZoneRow): Zone => ({
        name: row.name,
        dnssec: row.dnssec,
        nameservers,
        serial: row.serial,
        createdAt: row.createdAt,
        ...(row.key === null ? {} : { dnskeys: [dnskeyRecord(row.key)], ds: [row.key.ds] })
      })

      const detail = Effect.fnUntraced(function* (row: ZoneRow) {
        const rrsets = yield* store.rrsets(row.name)
        return { ...view(row), rrsets: servedRrsets(row, rrsets, nameservers) } satisfies ZoneDetail
      })

      const zoneName = (input: string) =>
        Effect.fromResult(
          Result.mapError(
            normalizeHostnameResult(input, settings),
            (error) =>
              new BadRequest({
                message: error.message.replace(/^Hostname/, "Zone name"),
                ...(error.details === undefined ? {} : { details: error.details })
              })
          )
        )

      /** The org's zone of a path, read now; a zone of another org is 404 like a missing one. */
      const ownZone = Effect.fnUntraced(function* (orgId: OrgId, zone: string) {
        const row = yield* store.find(canonicalHost(zone))
        if (Option.isNone(row) || row.value.orgId !== orgId) {
          return yield* new NotFound({ message: `zone ${zone} not found` })
        }
        return row.value
      })

      const taken = (name: string) =>
        new ZoneTaken({ message: `the zone ${name}, a parent or a child of it is held by another organization` })

      /** Inside a transaction: the org's zone of `name`, inserted when missing; `created` says which. */
      const insertOrFind = Effect.fnUntraced(function* (orgId: OrgId, name: string, at: string) {
        yield* store.lockTree(name)
        const related = yield* store.related(name)
        const same = related.find((row) => row.name === name)
        if (same !== undefined && same.orgId === orgId) return { row: same, created: false }
        if (related.some((row) => row.orgId !== orgId)) return yield* taken(name)
        const seconds = Math.floor(Date.parse(at) / 1000)
        const row: ZoneRow = {
          name,
          orgId,
          serial: seconds,
          dnssec: "off",
          key: null,
          dsRecorded: [],
          createdAt: at
        }
        yield* store.insert(row)
        return { row, created: true }
      })

      const list = Effect.fn("Zones.list")(function* (actor: Actor, orgSlug: string) {
        const { org } = yield* policy.require(actor, orgSlug, zoneRules.list)
        yield* requireEnabled
        return (yield* store.listByOrg(org.id)).map(view)
      })

      const create = Effect.fn("Zones.create")(function* (actor: Actor, orgSlug: string, input: string) {
        const grant = yield* mutation.authorizeOrg(actor, orgSlug, zoneRules.create)
        const name = yield* zoneName(input)
        yield* requireEnabled
        const row = yield* mutation
          .org(grant, ({ org, at }) =>
            Effect.map(insertOrFind(org.id, name, at), ({ row, created }) =>
              created ? audited(row, { action: "dns.zone.create", target: name, data: { zone: name } }) : unaudited(row)
            )
          )
          .pipe(
            // A concurrent create of the same zone by the same org answers like a repeat.
            Effect.catchTag("ZoneTaken", (error) =>
              Effect.flatMap(store.find(name), (winner) =>
                Option.isSome(winner) && winner.value.orgId === grant.org.id
                  ? Effect.succeed(winner.value)
                  : Effect.fail(error)
              )
            )
          )
        return yield* detail(row)
      })

      const get = Effect.fn("Zones.get")(function* (actor: Actor, orgSlug: string, zone: string) {
        const { org } = yield* policy.require(actor, orgSlug, zoneRules.get)
        yield* requireEnabled
        return yield* detail(yield* ownZone(org.id, zone))
      })

      const remove = Effect.fn("Zones.remove")(function* (actor: Actor, orgSlug: string, zone: string) {
        const grant = yield* mutation.authorizeOrg(actor, orgSlug, zoneRules.remove)
        yield* requireEnabled
        yield* mutation.org(grant, ({ org }) =>
          Effect.gen(function* () {
            const row = yield* ownZone(org.id, zone)
            yield* store.remove(row.name)
            return audited(undefined, { action: "dns.zone.delete", target: row.name, data: { zone: row.name } })
          })
        )
      })

      /** The path's owner and type; the apex SOA and NS are answered as managed before any other check. */
      const rrsetKey = (zone: string, name: string, type: string) =>
        Effect.gen(function* () {
          const owner = yield* Effect.fromResult(parseOwner(canonicalHost(zone), name))
          const upper = type.toUpperCase()
          if (owner === "@" && managedTypes.includes(upper)) return { owner, type: upper, managed: true as const }
          const checked: RrsetType = yield* Effect.fromResult(parseType(type))
          return { owner, type: checked, managed: false as const }
        })

      const managed = (owner: string, type: string) =>
        new ManagedRrset({ message: `the ${type} rrset at ${owner} is managed by the system` })

      /** A stored rrset the service keeps for a custom hostname (see `HostedZonesDns`). */
      const isManaged = (stored: ReadonlyArray<RrsetRow>, owner: string, type: string) =>
        stored.some((row) => row.name === owner && row.type === type && row.managed === true)

      const putRrset = Effect.fn("Zones.putRrset")(function* (
        actor: Actor,
        orgSlug: string,
        zone: string,
        name: string,
        type: string,
        input: PutRrsetInput
      ) {
        const grant = yield* mutation.authorizeOrg(actor, orgSlug, zoneRules.putRrset)
        const key = yield* rrsetKey(zone, name, type)
        const zoneName = canonicalHost(zone)
        let records: Array<string> = []
        if (!key.managed) {
          if (input.records.length === 0) {
            return yield* new BadRequest({ message: "records must hold at least one record; DELETE removes an rrset" })
          }
          const ttl = input.ttl ?? defaultTtl
          if (ttl < minTtl || ttl > maxTtl) {
            return yield* new BadRequest({
              message: `ttl must be between ${minTtl} and ${maxTtl} seconds`,
              details: { ttl }
            })
          }
          if (key.type === "NS" && key.owner.split(".")[0] === "*") {
            return yield* new BadRequest({ message: "a wildcard name cannot hold an NS delegation" })
          }
          for (const record of input.records) {
            const normalized = yield* Effect.fromResult(normalizeRecord(zoneName, key.type, record))
            if (!records.includes(normalized)) records.push(normalized)
          }
          const size = rrsetWireLength(absoluteOwner(zoneName, key.owner), key.type, records)
          if (size > maxRrsetWireBytes) {
            return yield* new BadRequest({
              message: `the rrset takes ${size} bytes in DNS wire form; at most ${maxRrsetWireBytes} fit one answer`,
              details: { limit: maxRrsetWireBytes, size }
            })
          }
        }
        yield* requireEnabled
        const row: RrsetRow = { name: key.owner, type: key.type, ttl: input.ttl ?? defaultTtl, records }
        return yield* mutation.org(grant, ({ org, at }) =>
          Effect.gen(function* () {
            const found = yield* ownZone(org.id, zone)
            if (key.managed) return yield* managed(key.owner, key.type)
            if (key.type === "CNAME") {
              if (key.owner === "@") {
                return yield* new CnameConflict({ message: "a CNAME cannot be at the zone apex" })
              }
              if (records.length > 1) {
                return yield* new CnameConflict({ message: "a CNAME rrset holds exactly one record" })
              }
            }
            const stored = yield* store.rrsets(found.name)
            if (isManaged(stored, key.owner, key.type)) return yield* managed(key.owner, key.type)
            const beside = stored.filter((other) => other.name === key.owner && other.type !== key.type)
            if ((key.type === "CNAME" && beside.length > 0) || beside.some((other) => other.type === "CNAME")) {
              return yield* new CnameConflict({
                message: `${key.owner} cannot hold a CNAME beside other types (${[...beside.map((other) => other.type), key.type].join(", ")})`
              })
            }
            yield* store.putRrset(found.name, row)
            yield* store.touch(found.name, at)
            const rrset: Rrset = { ...row, managed_by: null }
            return audited(rrset, {
              action: "dns.rrset.set",
              target: found.name,
              data: { zone: found.name, name: row.name, type: row.type }
            })
          })
        )
      })

      const removeRrset = Effect.fn("Zones.removeRrset")(function* (
        actor: Actor,
        orgSlug: string,
        zone: string,
        name: string,
        type: string
      ) {
        const grant = yield* mutation.authorizeOrg(actor, orgSlug, zoneRules.removeRrset)
        const key = yield* rrsetKey(zone, name, type)
        yield* requireEnabled
        yield* mutation.org(grant, ({ org, at }) =>
          Effect.gen(function* () {
            const found = yield* ownZone(org.id, zone)
            if (key.managed) return yield* managed(key.owner, key.type)
            if (isManaged(yield* store.rrsets(found.name), key.owner, key.type)) {
              return yield* managed(key.owner, key.type)
            }
            if (!(yield* store.removeRrset(found.name, key.owner, key.type))) {
              return yield* new NotFound({ message: `no ${key.type} rrset at ${key.owner} in ${found.name}` })
            }
            yield* store.touch(found.name, at)
            return audited(undefined, {
              action: "dns.rrset.delete",
              target: found.name,
              data: { zone: found.name, name: key.owner, type: key.type }
            })
          })
        )
      })

      const setDnssec = Effect.fn("Zones.setDnssec")(function* (
        actor: Actor,
        orgSlug: string,
        zone: string,
        enabled: boolean
      ) {
        const grant = yield* mutation.authorizeOrg(actor, orgSlug, zoneRules.dnssec)
        yield* requireEnabled
        const before = yield* ownZone(grant.org.id, zone)
        // The key is made and sealed before the transaction; a concurrent enable that wins keeps its own key.
        let key: ZoneKey | null = null
        if (enabled && before.dnssec === "off") {
          const made = yield* newZoneKey(before.name)
          const sealed = yield* sealer.seal(Redacted.value(made.privateKey), zoneKeyContext(before.name))
          key = { sealed, publicKey: made.publicKey, keyTag: made.keyTag, ds: made.ds }
        }
        const row = yield* mutation.org(grant, ({ org, at }) =>
          Effect.gen(function* () {
            const found = yield* ownZone(org.id, zone)
            if (enabled === (found.dnssec !== "off") || (enabled && key === null)) return unaudited(found)
            yield* store.setDnssec(found.name, { state: enabled ? "signing" : "off", key, dsRecorded: [] })
            return unaudited(yield* store.touch(found.name, at))
          })
        )
        return view(row)
      })

      const putDs = Effect.fn("Zones.putDs")(function* (
        actor: Actor,
        orgSlug: string,
        zone: string,
        ds: ReadonlyArray<string>
      ) {
        const grant = yield* mutation.authorizeOrg(actor, orgSlug, zoneRules.putDs)
        const entries = ds.map((entry) => entry.trim().replace(/\s+/g, " "))
        const bad = entries.find((entry) => !dsPattern.test(entry))
        if (bad !== undefined) {
          return yield* new BadRequest({
            message: `DS ${JSON.stringify(bad)} is not "<keytag> <algorithm> <digest type> <hex digest>"`,
            details: { ds: bad }
          })
        }
        yield* requireEnabled
        const row = yield* mutation.org(grant, ({ org }) =>
          Effect.gen(function* () {
            const found = yield* ownZone(org.id, zone)
            if (found.dnssec === "off" || found.key === null) {
              return yield* new DnssecOff({ message: `DNSSEC is off for ${found.name}` })
            }
            const ours = found.key.ds.toLowerCase()
            const mismatch = entries.find((entry) => entry.toLowerCase() !== ours)
            if (mismatch !== undefined) {
              return yield* new BadRequest({
                message: `DS ${JSON.stringify(mismatch)} does not match the zone's key (expected ${found.key.ds})`,
                details: { ds: mismatch, expected: found.key.ds }
              })
            }
            if (entries.length === 0) return unaudited(found)
            const recorded = [...new Set(entries.map((entry) => entry.toLowerCase()))]
            yield* store.setDnssec(found.name, { state: "ds_pending", key: found.key, dsRecorded: recorded })
            return unaudited({ ...found, dnssec: "ds_pending" as const, dsRecorded: recorded })
          })
        )
        return view(row)
      })

      const ensureZone = Effect.fn("Zones.ensureZone")(function* (orgId: OrgId, input: string, at: string) {
        const name = yield* zoneName(input)
        yield* requireEnabled
        const { row } = yield* insertOrFind(orgId, name, at)
        return yield* detail(row)
      })

      return Zones.of({
        list,
        create,
        get,
        remove,
        putRrset,
        removeRrset,
        setDnssec,
        putDs,
        requireEnabled,
        ensureZone,
        nameservers
      })
    })
  )
}

/** Org delete's `zones` holding (decisions.md part 10). */
export const zoneHoldings = Effect.map(Effect.service(ZoneStore), (store): HoldingCounter => ({
  kind: "zones",
  count: (orgId) =>
    Effect.map(store.listByOrg(orgId), (rows) => ({
      count: rows.length,
      names: rows.map((row) => row.name).slice(0, 5)
    }))
}))
