import { assert, layer } from "@effect/vitest"
import { Domains, Kernel, Orgs } from "@hostplane/core"
import { Effect, Exit, type Layer, Option, Schema } from "effect"
import { at, day, makeOrg, randomSuffix, uniqueId } from "../contract/Fixtures.ts"

/** What the domain contract needs beside `DomainStore`: domains belong to orgs. */
export type DomainStoreSuiteServices = Domains.DomainStore | Orgs.OrgStore | Kernel.Transactor

class Boom extends Schema.TaggedError<Boom>()("Boom", { message: Schema.String }) {}

const givenOrg = Effect.gen(function* () {
  const org = makeOrg()
  yield* (yield* Orgs.OrgStore).insert(org)
  return org
}).pipe(Effect.orDie)

const domain = (orgId: Kernel.OrgId, overrides: Partial<Domains.DomainRow> = {}): Domains.DomainRow => ({
  name: `d-${randomSuffix()}.example`,
  orgId,
  status: "registering",
  source: "purchase",
  expiresAt: null,
  autoRenew: true,
  locked: true,
  nameservers: ["ns1.contract.test", "ns2.contract.test"],
  createdAt: at(0),
  purchase: {
    years: 2,
    priceCents: 1299,
    contact: { keyId: "k1", ciphertext: "c2VhbGVk" },
    registered: false,
    actorId: uniqueId("usr")
  },
  ...overrides
})

/** The `DomainStore` contract: names are unique across orgs; names are random so a database may be shared. */
export const domainStoreSuite = <E>(name: string, store: Layer.Layer<DomainStoreSuiteServices, E>): void =>
  layer(store)(`${name}: DomainStore contract`, (it) => {
    it.effect("insert stores a row that find answers exactly, the sealed contact and saga state included", () =>
      Effect.gen(function* () {
        const domains = yield* Domains.DomainStore
        const org = yield* givenOrg
        const row = domain(org.id)
        assert.isTrue(yield* domains.insert(row))
        assert.deepStrictEqual(yield* domains.find(row.name), Option.some(row))
        assert.isTrue(Option.isNone(yield* domains.find(`missing-${randomSuffix()}.example`)))
      })
    )

    it.effect("a name is held by one org at a time: a second insert of it answers false", () =>
      Effect.gen(function* () {
        const domains = yield* Domains.DomainStore
        const first = yield* givenOrg
        const second = yield* givenOrg
        const row = domain(first.id)
        assert.isTrue(yield* domains.insert(row))
        assert.isFalse(yield* domains.insert({ ...row, orgId: second.id }))
        assert.strictEqual(Option.getOrThrow(yield* domains.find(row.name)).orgId, first.id)
      })
    )

    it.effect("save replaces the row of its name (the org too); remove drops it", () =>
      Effect.gen(function* () {
        const domains = yield* Domains.DomainStore
        const first = yield* givenOrg
        const second = yield* givenOrg
        const row = domain(first.id)
        assert.isFalse(yield* domains.save(row), "nothing to replace yet")
        yield* domains.insert(row)
        const active: Domains.DomainRow = {
          ...row,
          orgId: second.id,
          status: "active",
          expiresAt: at(365 * day),
          locked: false,
          nameservers: ["ns1.other.test"],
          purchase: null
        }
        assert.isTrue(yield* domains.save(active))
        assert.deepStrictEqual(yield* domains.find(row.name), Option.some(active))
        assert.isTrue(yield* domains.remove(row.name))
        assert.isFalse(yield* domains.remove(row.name))
        assert.isTrue(Option.isNone(yield* domains.find(row.name)))
      })
    )

    it.effect("list answers the org's domains by name; listRegistered every purchase past registering", () =>
      Effect.gen(function* () {
        const domains = yield* Domains.DomainStore
        const org = yield* givenOrg
        const suffix = randomSuffix()
        const b = domain(org.id, { name: `b-${suffix}.example`, status: "active", purchase: null })
        const a = domain(org.id, { name: `a-${suffix}.example`, status: "imported", source: "import", purchase: null })
        const c = domain(org.id, { name: `c-${suffix}.example` })
        for (const row of [b, a, c]) yield* domains.insert(row)
        assert.deepStrictEqual(
          (yield* domains.list(org.id)).map((row) => row.name),
          [a.name, b.name, c.name]
        )
        const registered = (yield* domains.listRegistered).map((row) => row.name)
        assert.include(registered, b.name)
        assert.notInclude(registered, a.name, "an import is not registered here")
        assert.notInclude(registered, c.name, "a purchase still registering is the saga's")
      })
    )

    it.effect("writes join the ambient transaction and roll back with it", () =>
      Effect.gen(function* () {
        const domains = yield* Domains.DomainStore
        const tx = yield* Kernel.Transactor
        const org = yield* givenOrg
        const row = domain(org.id)
        const exit = yield* Effect.exit(
          tx.withTransaction(Effect.andThen(domains.insert(row), Effect.fail(new Boom({ message: "boom" }))))
        )
        assert.isTrue(Exit.isFailure(exit))
        assert.isTrue(Option.isNone(yield* domains.find(row.name)))
      })
    )
  })
