import { assert, describe, it } from "@effect/vitest"
import { Domains } from "@hostplane/core"
import { Effect, Exit, Option, Redacted, type Scope } from "effect"
import type { RegistrarAccount } from "./RegistrarAccount.ts"

/** A registrar under test and the account it acts on (to arrange names and read what it did). */
export interface RegistrarUnderTest {
  readonly registrar: Domains.Registrar["Service"]
  readonly account: RegistrarAccount
}

const contact: Domains.RegistrarContact = {
  firstName: "Grace",
  lastName: "Hopper",
  companyName: null,
  address1: "1 Navy Way",
  city: "Arlington",
  zip: "22202",
  country: "US",
  phone: "+1.5551234567",
  email: "grace@example.test"
}

const order = (name: string, overrides: Partial<Domains.RegistrarCreate> = {}): Domains.RegistrarCreate => ({
  name,
  years: 1,
  contact,
  nameservers: ["ns1.contract.test", "ns2.contract.test"],
  locked: true,
  autorenew: true,
  purchaseCents: 1299,
  ...overrides
})

const reason = <A>(exit: Exit.Exit<A, Domains.RegistrarFailure>) =>
  Exit.isFailure(exit) ? Option.getOrThrow(Exit.findErrorOption(exit)).reason : "succeeded"

/**
 * The `Registrar` contract: what the domains saga relies on, so the in-process `RegistrarMemory` and the Name.com
 * client (against its loopback fake) behave alike.
 */
export const registrarSuite = <E>(name: string, make: Effect.Effect<RegistrarUnderTest, E, Scope.Scope>): void =>
  void describe(`${name}: Registrar contract`, () => {
    const run = (test: (under: RegistrarUnderTest) => Effect.Effect<void, Domains.RegistrarFailure>) =>
      Effect.scoped(Effect.flatMap(Effect.orDie(make), test))

    it.effect("checkAvailability prices a free name in cents; a held or taken name is not purchasable", () =>
      run(({ registrar, account }) =>
        Effect.gen(function* () {
          account.taken.add("taken.example")
          account.premium.set("rare.example", { purchase: 100.1, renewal: 20.05 })
          yield* registrar.create(order("held.example"))
          const answers = yield* registrar.checkAvailability([
            "free.example",
            "rare.example",
            "taken.example",
            "held.example"
          ])
          assert.deepStrictEqual(
            answers.map((a) => [a.name, a.purchasable, a.premium, a.purchaseCents, a.renewalCents]),
            [
              ["free.example", true, false, 1299, 1499],
              ["rare.example", true, true, 10010, 2005],
              ["taken.example", false, false, null, null],
              ["held.example", false, false, null, null]
            ]
          )
        })
      )
    )

    it.effect("create registers the name once with our name servers, lock and auto-renew; get then finds it", () =>
      run(({ registrar, account }) =>
        Effect.gen(function* () {
          assert.isTrue(Option.isNone(yield* registrar.get("new.example")))
          const created = yield* registrar.create(order("new.example", { years: 2 }))
          assert.deepStrictEqual(
            [created.name, created.nameservers, created.locked, created.autorenewEnabled],
            ["new.example", ["ns1.contract.test", "ns2.contract.test"], true, true]
          )
          assert.strictEqual(new Date(created.expiresAt!).getUTCFullYear(), new Date().getUTCFullYear() + 2)
          assert.deepStrictEqual(Option.getOrThrow(yield* registrar.get("new.example")), created)
          assert.strictEqual(reason(yield* Effect.exit(registrar.create(order("new.example")))), "unavailable")
          assert.strictEqual(account.creates.length, 1)
        })
      )
    )

    it.effect("refusals carry their reason: payment_failed, rejected (a contact field missing), not_found", () =>
      run(({ registrar, account }) =>
        Effect.gen(function* () {
          account.declinePayment = true
          assert.strictEqual(reason(yield* Effect.exit(registrar.create(order("a.example")))), "payment_failed")
          account.declinePayment = false
          const noLastName = order("b.example", { contact: { ...contact, lastName: "" } })
          assert.strictEqual(reason(yield* Effect.exit(registrar.create(noLastName))), "rejected")
          assert.strictEqual(reason(yield* Effect.exit(registrar.setLock("missing.example", true))), "not_found")
          assert.strictEqual(reason(yield* Effect.exit(registrar.renew("missing.example", 1, null))), "not_found")
          assert.strictEqual(account.creates.length, 0)
        })
      )
    )

    it.effect("renew, lock, auto-renew, name servers and the auth code act on the held domain", () =>
      run(({ registrar, account }) =>
        Effect.gen(function* () {
          const created = yield* registrar.create(order("mine.example"))
          const renewed = yield* registrar.renew("mine.example", 2, 2998)
          assert.strictEqual(
            new Date(renewed.expiresAt!).getUTCFullYear(),
            new Date(created.expiresAt!).getUTCFullYear() + 2
          )
          assert.isFalse((yield* registrar.setLock("mine.example", false)).locked)
          assert.isFalse((yield* registrar.setAutorenew("mine.example", false)).autorenewEnabled)
          assert.deepStrictEqual((yield* registrar.setNameservers("mine.example", ["ns.other.test"])).nameservers, [
            "ns.other.test"
          ])
          const code = yield* registrar.authCode("mine.example")
          assert.strictEqual(Redacted.value(code), account.domains.get("mine.example")!.authCode)
          const listed = yield* registrar.list(1)
          assert.deepStrictEqual([listed.domains.map((d) => d.name), listed.nextPage], [["mine.example"], null])
        })
      )
    )
  })
