import { assert, layer } from "@effect/vitest"
import { Dns, Kernel, Orgs } from "@hostplane/core"
import { Effect, Exit, Fiber, type Layer, Option, Schema } from "effect"
import { at, makeOrg, minute, randomSuffix } from "../contract/Fixtures.ts"

/** What the zone contract needs beside `ZoneStore`: zones belong to orgs; writes run in transactions. */
export type ZoneStoreSuiteServices = Dns.ZoneStore | Orgs.OrgStore | Kernel.Transactor

class Boom extends Schema.TaggedError<Boom>()("Boom", { message: Schema.String }) {}

const givenZone = Effect.gen(function* () {
  const org = makeOrg()
  yield* (yield* Orgs.OrgStore).insert(org)
  const row: Dns.ZoneRow = {
    name: `z${randomSuffix()}.example`,
    orgId: org.id,
    serial: 100,
    dnssec: "off",
    key: null,
    dsRecorded: [],
    createdAt: at(0)
  }
  yield* (yield* Dns.ZoneStore).insert(row)
  return row
}).pipe(Effect.orDie)

const www: Dns.RrsetRow = { name: "www", type: "A", ttl: 300, records: ["192.0.2.1", "192.0.2.2"] }

/** The `ZoneStore` contract: every adapter must pass it; zone names are unique per test so a database may be shared. */
export const zoneStoreSuite = <E>(name: string, store: Layer.Layer<ZoneStoreSuiteServices, E>): void =>
  layer(store)(`${name}: ZoneStore contract`, (it) => {
    it.effect("a zone name is unique across orgs: a second insert is ZoneTaken", () =>
      Effect.gen(function* () {
        const zones = yield* Dns.ZoneStore
        const zone = yield* givenZone
        assert.deepStrictEqual(yield* zones.find(zone.name), Option.some(zone))
        const other = makeOrg()
        yield* (yield* Orgs.OrgStore).insert(other)
        const exit = yield* Effect.exit(zones.insert({ ...zone, orgId: other.id }))
        assert.isTrue(Exit.isFailure(exit))
        assert.deepStrictEqual(
          (yield* zones.listByOrg(zone.orgId)).map((row) => row.name),
          [zone.name]
        )
      })
    )

    it.effect(
      "related answers the zone, its parents and its children, never a sibling or a name sharing a suffix",
      () =>
        Effect.gen(function* () {
          const zones = yield* Dns.ZoneStore
          const zone = yield* givenZone
          const child: Dns.ZoneRow = { ...zone, name: `sub.${zone.name}` }
          const lookalike: Dns.ZoneRow = { ...zone, name: `x${zone.name}` }
          yield* zones.insert(child)
          yield* zones.insert(lookalike)
          const names = (rows: ReadonlyArray<Dns.ZoneRow>) => rows.map((row) => row.name).sort()
          assert.deepStrictEqual(names(yield* zones.related(zone.name)), [child.name, zone.name].sort())
          assert.deepStrictEqual(names(yield* zones.related(`a.b.${child.name}`)), [child.name, zone.name].sort())
          assert.deepStrictEqual(names(yield* zones.related(`other.${lookalike.name}`)), [lookalike.name])
        })
    )

    it.effect("rrsets are replaced whole, removed by name and type, and go with their zone", () =>
      Effect.gen(function* () {
        const zones = yield* Dns.ZoneStore
        const zone = yield* givenZone
        yield* zones.putRrset(zone.name, www)
        yield* zones.putRrset(zone.name, { name: "@", type: "MX", ttl: 600, records: ["10 mail.example."] })
        yield* zones.putRrset(zone.name, { ...www, ttl: 60, records: ["192.0.2.9"] })
        assert.deepStrictEqual(yield* zones.rrsets(zone.name), [
          { name: "@", type: "MX", ttl: 600, records: ["10 mail.example."] },
          { ...www, ttl: 60, records: ["192.0.2.9"] }
        ])
        assert.isTrue(yield* zones.removeRrset(zone.name, "@", "MX"))
        assert.isFalse(yield* zones.removeRrset(zone.name, "@", "MX"))
        yield* zones.remove(zone.name)
        assert.deepStrictEqual(yield* zones.find(zone.name), Option.none())
        assert.deepStrictEqual(yield* zones.rrsets(zone.name), [])
      })
    )

    it.effect("touch raises the serial by one, or to the time of the change when that is larger", () =>
      Effect.gen(function* () {
        const zones = yield* Dns.ZoneStore
        const zone = yield* givenZone
        assert.strictEqual((yield* zones.touch(zone.name, "1970-01-01T00:00:10.000Z")).serial, 101)
        assert.strictEqual((yield* zones.touch(zone.name, "1970-01-01T00:00:10.000Z")).serial, 102)
        const seconds = Math.floor(Date.parse(at(minute)) / 1000)
        assert.strictEqual((yield* zones.touch(zone.name, at(minute))).serial, seconds)
      })
    )

    it.effect(
      "setDnssec stores the state, the key and the recorded DS; contents answers the zone with its rrsets",
      () =>
        Effect.gen(function* () {
          const zones = yield* Dns.ZoneStore
          const zone = yield* givenZone
          const key: Dns.ZoneKey = {
            sealed: { keyId: "k1", ciphertext: "c2VhbGVk" },
            publicKey: "cHVibGlj",
            keyTag: 4242,
            ds: "4242 13 2 abcd"
          }
          yield* zones.setDnssec(zone.name, { state: "ds_pending", key, dsRecorded: ["4242 13 2 abcd"] })
          yield* zones.putRrset(zone.name, www)
          const contents = Option.getOrThrow(yield* zones.contents(zone.name))
          assert.deepStrictEqual(contents.zone, { ...zone, dnssec: "ds_pending", key, dsRecorded: ["4242 13 2 abcd"] })
          assert.deepStrictEqual(contents.rrsets, [www])
          const all = yield* zones.all
          assert.deepStrictEqual(
            all.find((entry) => entry.zone.name === zone.name),
            contents
          )
          yield* zones.setDnssec(zone.name, { state: "off", key: null, dsRecorded: [] })
          assert.strictEqual(Option.getOrThrow(yield* zones.find(zone.name)).key, null)
        })
    )

    it.effect("a watcher hears of a committed write; a rolled-back one leaves the contents as they were", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const zones = yield* Dns.ZoneStore
          const tx = yield* Kernel.Transactor
          const zone = yield* givenZone
          const feed = yield* zones.watch
          yield* Effect.exit(
            tx.withTransaction(Effect.andThen(zones.putRrset(zone.name, www), Effect.fail(new Boom({ message: "x" }))))
          )
          const heard = yield* Effect.forkChild(feed.next)
          yield* tx.withTransaction(zones.touch(zone.name, at(0)))
          const names = yield* Fiber.join(heard)
          assert.include(names, zone.name)
          // Whatever was heard, the committed contents hold no rolled-back rrset.
          assert.deepStrictEqual(Option.getOrThrow(yield* zones.contents(zone.name)).rrsets, [])
        })
      )
    )
  })
