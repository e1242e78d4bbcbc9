import { Dns, Errors } from "@hostplane/core"
import { Effect, Layer, Option, PubSub } from "effect"
import {
  awaitTransactions,
  MemoryState,
  type MemoryStore,
  memoryTable,
  read,
  type Tables,
  write
} from "../memory/MemoryState.ts"

/** Zones by name. */
export const zoneRows = memoryTable("dns.zones", () => new Map<string, Dns.ZoneRow>())

/** Rrsets by `rrsetKey(zone, name, type)`. */
export const rrsetRows = memoryTable("dns.rrsets", () => new Map<string, Dns.RrsetRow & { readonly zone: string }>())

const zonesOf = (tables: Tables) => tables(zoneRows)
const rrsetsOf = (tables: Tables) => tables(rrsetRows)

const rrsetKey = (zone: string, name: string, type: string) => `${zone}\u0000${name}\u0000${type}`

const byNameThenType = (a: Dns.RrsetRow, b: Dns.RrsetRow) =>
  a.name !== b.name ? (a.name < b.name ? -1 : 1) : a.type < b.type ? -1 : a.type > b.type ? 1 : 0

const rrsetsIn = (tables: Tables, zone: string): Array<Dns.RrsetRow> =>
  [...rrsetsOf(tables).values()]
    .filter((row) => row.zone === zone)
    .map(({ name, type, ttl, records, managed }) =>
      managed === true ? { name, type, ttl, records, managed } : { name, type, ttl, records }
    )
    .sort(byNameThenType)

const isUnder = (name: string, parent: string) => name.endsWith(`.${parent}`)

/** The in-process change signal of one memory state: what PostgreSQL's NOTIFY is to `ZoneStorePg`. */
const signals = new WeakMap<MemoryStore, PubSub.PubSub<string>>()
const signalOf = (store: MemoryStore) => {
  let pubsub = signals.get(store)
  if (pubsub === undefined) {
    pubsub = Effect.runSync(PubSub.unbounded<string>())
    signals.set(store, pubsub)
  }
  return pubsub
}

/**
 * `ZoneStore` on the shared memory state. Readers of `contents` and `all` first wait for a running transaction to
 * end, so a name server woken by a write inside a transaction reads what that transaction committed.
 */
export const make = (store: MemoryStore): Dns.ZoneStore["Service"] => {
  const signal = signalOf(store)
  const changed = (zone: string) => PubSub.publish(signal, zone).pipe(Effect.asVoid)
  const touchRow = (tables: Tables, name: string, at: string) => {
    const row = zonesOf(tables).get(name)
    if (row === undefined) throw new Error(`no zone ${name}`)
    const next = { ...row, serial: Math.max(row.serial + 1, Math.floor(Date.parse(at) / 1000)) }
    zonesOf(tables).set(name, next)
    return next
  }
  return Dns.ZoneStore.of({
    // Memory transactions already run one at a time.
    lockTree: () => Effect.void,
    find: (name) => read(store, (tables) => Option.fromNullishOr(zonesOf(tables).get(name))),
    listByOrg: (orgId) =>
      read(store, (tables) =>
        [...zonesOf(tables).values()]
          .filter((row) => row.orgId === orgId)
          .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      ),
    related: (name) =>
      read(store, (tables) =>
        [...zonesOf(tables).values()].filter(
          (row) => row.name === name || isUnder(name, row.name) || isUnder(row.name, name)
        )
      ),
    insert: (row) =>
      Effect.flatMap(
        write(store, (tables) => {
          if (zonesOf(tables).has(row.name)) return false
          zonesOf(tables).set(row.name, row)
          return true
        }),
        (inserted) =>
          inserted
            ? changed(row.name)
            : Effect.fail(new Errors.ZoneTaken({ message: `the zone ${row.name} is already in use` }))
      ),
    remove: (name) =>
      write(store, (tables) => {
        zonesOf(tables).delete(name)
        for (const [key, row] of rrsetsOf(tables)) if (row.zone === name) rrsetsOf(tables).delete(key)
      }).pipe(Effect.andThen(changed(name))),
    rrsets: (zone) => read(store, (tables) => rrsetsIn(tables, zone)),
    putRrset: (zone, row) =>
      write(store, (tables) => {
        if (!zonesOf(tables).has(zone)) throw new Error(`no zone ${zone}`)
        rrsetsOf(tables).set(rrsetKey(zone, row.name, row.type), { ...row, zone })
      }).pipe(Effect.andThen(changed(zone))),
    removeRrset: (zone, name, type) =>
      write(store, (tables) => rrsetsOf(tables).delete(rrsetKey(zone, name, type))).pipe(
        Effect.tap(() => changed(zone))
      ),
    touch: (name, at) => write(store, (tables) => touchRow(tables, name, at)).pipe(Effect.tap(() => changed(name))),
    setDnssec: (name, { state, key, dsRecorded }) =>
      write(store, (tables) => {
        const row = zonesOf(tables).get(name)
        if (row === undefined) throw new Error(`no zone ${name}`)
        zonesOf(tables).set(name, { ...row, dnssec: state, key, dsRecorded })
      }).pipe(Effect.andThen(changed(name))),
    contents: (name) =>
      Effect.andThen(
        awaitTransactions(store),
        read(store, (tables) =>
          Option.map(Option.fromNullishOr(zonesOf(tables).get(name)), (zone) => ({
            zone,
            rrsets: rrsetsIn(tables, name)
          }))
        )
      ),
    all: Effect.andThen(
      awaitTransactions(store),
      read(store, (tables) =>
        [...zonesOf(tables).values()].map((zone) => ({ zone, rrsets: rrsetsIn(tables, zone.name) }))
      )
    ),
    watch: Effect.map(PubSub.subscribe(signal), (subscription) => ({ next: PubSub.takeAll(subscription) }))
  })
}

export const layer: Layer.Layer<Dns.ZoneStore, never, MemoryState> = Layer.effect(
  Dns.ZoneStore,
  Effect.map(Effect.service(MemoryState), make)
)
