import { RegistrarNameCom } from "@hostplane/adapters-providers"
import { Domains } from "@hostplane/core"
import { type FakeNameCom, registrarSuite, startFakeNameCom } from "@hostplane/testkit"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Option, Redacted } from "effect"
import { FetchHttpClient } from "effect/http"

/** The fake over loopback and the adapter pointed at it; the fake closes with the test's scope. */
const setup = (token?: string) =>
  Effect.gen(function* () {
    const fake: FakeNameCom = yield* Effect.acquireRelease(
      Effect.promise(() => startFakeNameCom()),
      (fake) => Effect.promise(() => fake.close())
    )
    const registrar = yield* RegistrarNameCom.make({
      url: `${fake.url}/`,
      username: fake.username,
      token: Redacted.make(token ?? fake.token),
      timeout: "5 seconds"
    }).pipe(Effect.provide(FetchHttpClient.layer))
    return { fake, registrar }
  })

const contact: Domains.RegistrarContact = {
  firstName: "Ada",
  lastName: "Lovelace",
  companyName: null,
  address1: "12 St James's Square",
  city: "London",
  zip: "SW1Y 4JH",
  country: "GB",
  phone: "+44.2079460958",
  email: "ada@example.test"
}

const create = (name: string, overrides: Partial<Domains.RegistrarCreate> = {}): Domains.RegistrarCreate => ({
  name,
  years: 2,
  contact,
  nameservers: ["ns1.hostplane.test", "ns2.hostplane.test"],
  locked: true,
  autorenew: true,
  purchaseCents: 829,
  ...overrides
})

const reasonOf = <A>(exit: Exit.Exit<A, Domains.RegistrarFailure>) =>
  Exit.isFailure(exit) ? Option.getOrThrow(Exit.findErrorOption(exit)).reason : "succeeded"

registrarSuite(
  "RegistrarNameCom over loopback HTTP",
  Effect.map(setup(), ({ fake, registrar }) => ({ registrar, account: fake.account }))
)

describe("RegistrarNameCom against the loopback Name.com fake", () => {
  it.effect("every call carries HTTP Basic username:token; a wrong token is a registrar error", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { fake, registrar } = yield* setup("wrong-token")
        const exit = yield* Effect.exit(registrar.checkAvailability(["a.example"]))
        assert.strictEqual(reasonOf(exit), "error")
        assert.isFalse(fake.requests[0]!.authorized)
        const good = yield* setup()
        yield* good.registrar.checkAvailability(["a.example"])
        assert.isTrue(good.fake.requests[0]!.authorized)
      })
    )
  )

  it.effect("checkAvailability posts domainNames and reads prices to exact cents; left-out flags are false", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { fake, registrar } = yield* setup()
        fake.account.price = { purchase: 8.29, renewal: 10.1 }
        fake.account.premium.set("gold.example", { purchase: 1234.57, renewal: 99.99 })
        fake.account.taken.add("taken.example")
        const answer = yield* registrar.checkAvailability(["free.example", "gold.example", "taken.example"])
        assert.deepStrictEqual(fake.requests[0], {
          method: "POST",
          path: "/v4/domains:checkAvailability",
          body: { domainNames: ["free.example", "gold.example", "taken.example"] },
          authorized: true
        })
        assert.deepStrictEqual(answer, [
          { name: "free.example", purchasable: true, premium: false, purchaseCents: 829, renewalCents: 1010 },
          { name: "gold.example", purchasable: true, premium: true, purchaseCents: 123457, renewalCents: 9999 },
          { name: "taken.example", purchasable: false, premium: false, purchaseCents: null, renewalCents: null }
        ])
      })
    )
  )

  it.effect(
    "create sends the contact in all four roles, our name servers, lock and auto-renew, the price and years",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { fake, registrar } = yield* setup()
          fake.account.price = { purchase: 8.29, renewal: 10.1 }
          const domain = yield* registrar.create(create("new.example"))
          const sent = fake.requests[0]!
          assert.strictEqual(`${sent.method} ${sent.path}`, "POST /v4/domains")
          const wire = { firstName: "Ada", lastName: "Lovelace", address1: "12 St James's Square", city: "London" }
          const more = { zip: "SW1Y 4JH", country: "GB", phone: "+44.2079460958", email: "ada@example.test" }
          const role = { ...wire, ...more }
          assert.deepStrictEqual(sent.body, {
            domain: {
              domainName: "new.example",
              contacts: { registrant: role, admin: role, tech: role, billing: role },
              nameservers: ["ns1.hostplane.test", "ns2.hostplane.test"],
              locked: true,
              autorenewEnabled: true
            },
            purchasePrice: 16.58,
            years: 2
          })
          assert.strictEqual(domain.name, "new.example")
          assert.deepStrictEqual(domain.nameservers, ["ns1.hostplane.test", "ns2.hostplane.test"])
          assert.isTrue(domain.locked && domain.autorenewEnabled)
          assert.strictEqual(domain.renewalCents, 1010)
          assert.match(domain.expiresAt ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/)
          assert.strictEqual(fake.account.creates.length, 1)
        })
      )
  )

  it.effect(
    "errors map as decided: 402 payment_failed, 422 and 400 rejected, 409 unavailable, 5xx and drops error",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { fake, registrar } = yield* setup()
          fake.account.declinePayment = true
          assert.strictEqual(reasonOf(yield* Effect.exit(registrar.create(create("a.example")))), "payment_failed")
          fake.account.declinePayment = false
          const noPhone = create("b.example", { contact: { ...contact, phone: "0207" } })
          assert.strictEqual(reasonOf(yield* Effect.exit(registrar.create(noPhone))), "rejected")
          assert.strictEqual(
            reasonOf(yield* Effect.exit(registrar.create(create("c.example", { years: 11 })))),
            "rejected"
          )
          fake.account.taken.add("d.example")
          assert.strictEqual(reasonOf(yield* Effect.exit(registrar.create(create("d.example")))), "unavailable")
          fake.failNext(/^POST \/v4\/domains$/, { status: 503, body: { message: "Service Unavailable" } })
          const down = yield* Effect.exit(registrar.create(create("e.example")))
          assert.strictEqual(reasonOf(down), "error")
          fake.failNext(/^POST \/v4\/domains$/, { drop: "after" })
          assert.strictEqual(reasonOf(yield* Effect.exit(registrar.create(create("f.example")))), "error")
          assert.deepStrictEqual(
            fake.account.creates.map((c) => c.domainName),
            ["f.example"],
            "the dropped answer's domain was bought"
          )
          const failed = yield* Effect.flip(registrar.create(noPhone))
          assert.notInclude(failed.message, "0207", "the registrar's details (which may echo the contact) are left out")
        })
      )
  )

  it.effect("get answers none on 404; list walks pages; renew, lock, name servers and the auth code", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { fake, registrar } = yield* setup()
        assert.isTrue(Option.isNone(yield* registrar.get("missing.example")))
        yield* registrar.create(create("mine.example", { years: 1 }))
        const found = Option.getOrThrow(yield* registrar.get("mine.example"))
        assert.isTrue(found.locked)
        const renewed = yield* registrar.renew("mine.example", 3, 4497)
        assert.strictEqual(
          new Date(renewed.expiresAt!).getUTCFullYear(),
          new Date(found.expiresAt!).getUTCFullYear() + 3
        )
        assert.deepStrictEqual(fake.requests.at(-1)!.body, { purchasePrice: 44.97, years: 3 })
        assert.isFalse((yield* registrar.setLock("mine.example", false)).locked)
        assert.strictEqual(fake.requests.at(-1)!.path, "/v4/domains/mine.example:unlock")
        assert.isTrue((yield* registrar.setLock("mine.example", true)).locked)
        assert.isFalse((yield* registrar.setAutorenew("mine.example", false)).autorenewEnabled)
        const moved = yield* registrar.setNameservers("mine.example", ["ns1.elsewhere.test"])
        assert.deepStrictEqual(moved.nameservers, ["ns1.elsewhere.test"])
        const code = yield* registrar.authCode("mine.example")
        assert.strictEqual(Redacted.value(code), fake.account.domains.get("mine.example")!.authCode)
        assert.strictEqual(String(code), "<redacted>")
        assert.strictEqual(reasonOf(yield* Effect.exit(registrar.setLock("missing.example", true))), "not_found")
        for (let i = 0; i < 1002; i++)
          yield* Effect.sync(() =>
            fake.account.domains.set(`p${i}.example`, {
              ...fake.account.domains.get("mine.example")!,
              domainName: `p${i}.example`
            })
          )
        const first = yield* registrar.list(1)
        assert.strictEqual(first.domains.length, 1000)
        assert.strictEqual(first.nextPage, 2)
        const second = yield* registrar.list(2)
        assert.deepStrictEqual([second.domains.length, second.nextPage], [3, null])
        assert.strictEqual(fake.requests.at(-1)!.path, "/v4/domains?page=2&perPage=1000")
      })
    )
  )

  it.effect("settings: none set is no registrar; some set is a config error; all set builds the client", () =>
    Effect.gen(function* () {
      const read = (env: Record<string, string>) =>
        Effect.exit(RegistrarNameCom.config.parse(ConfigProvider.fromEnv({ env })))
      const none = yield* read({})
      assert.isTrue(Exit.isSuccess(none) && Option.isNone(none.value))
      assert.isTrue(Exit.isFailure(yield* read({ SERVICE_REGISTRAR_URL: "https://api.dev.name.com" })))
      const bad = { SERVICE_REGISTRAR_URL: "ftp://x", SERVICE_REGISTRAR_USERNAME: "u", SERVICE_REGISTRAR_TOKEN: "t" }
      assert.isTrue(Exit.isFailure(yield* read(bad)))
      const all = yield* read({ ...bad, SERVICE_REGISTRAR_URL: "https://api.dev.name.com" })
      assert.isTrue(Exit.isSuccess(all) && Option.isSome(all.value))
    })
  )
})
