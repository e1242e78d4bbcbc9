import { assert, layer } from "@effect/vitest"
import { Ai, Billing, Kernel, Orgs, Projects } from "@hostplane/core"
import { Effect, Exit, type Layer, Option, Schema } from "effect"
import { at, day, givenProject, makeOrg, minute, randomSuffix } from "../contract/Fixtures.ts"

/** What the billing contracts need: rows belong to orgs, and claims and ledger rows join transactions. */
export type BillingStoreSuiteServices =
  Billing.BillingStore | Ai.CreditStore | Ai.AiKeyStore | Orgs.OrgStore | Projects.ProjectStore | Kernel.Transactor

class Boom extends Schema.TaggedError<Boom>()("Boom", { message: Schema.String }) {}

const givenOrg = Effect.gen(function* () {
  const org = makeOrg()
  yield* (yield* Orgs.OrgStore).insert(org)
  return org
})

/** The `BillingStore` and `CreditStore` contracts: every adapter must pass them; orgs and ids are unique per test. */
export const billingStoreSuite = <E>(name: string, store: Layer.Layer<BillingStoreSuiteServices, E>): void =>
  layer(store)(`${name}: BillingStore, CreditStore and AiKeyStore contract`, (it) => {
    it.effect("save inserts then replaces the org's row; find answers it", () =>
      Effect.gen(function* () {
        const billing = yield* Billing.BillingStore
        const org = yield* givenOrg
        assert.deepStrictEqual(yield* billing.find(org.id), Option.none())
        const row: Billing.SubscriptionRow = {
          orgId: org.id,
          subscriptionId: "sub_1",
          status: "active",
          periodEnd: at(30 * minute),
          cancelAtPeriodEnd: false,
          eventAt: at(0),
          customerSince: at(0),
          updatedAt: at(0)
        }
        yield* billing.save(row)
        assert.deepStrictEqual(yield* billing.find(org.id), Option.some(row))
        const canceled = { ...row, status: "canceled", periodEnd: null, cancelAtPeriodEnd: true, updatedAt: at(minute) }
        yield* billing.save(canceled)
        assert.deepStrictEqual(yield* billing.find(org.id), Option.some(canceled))
      })
    )

    it.effect("a webhook id is claimed once; a claim in a failed transaction is undone", () =>
      Effect.gen(function* () {
        const billing = yield* Billing.BillingStore
        const tx = yield* Kernel.Transactor
        const id = `msg_${randomSuffix()}`
        const failed = yield* Effect.exit(
          tx.withTransaction(
            Effect.andThen(billing.claimWebhook(id, "order.paid", at(0)), Effect.fail(new Boom({ message: "x" })))
          )
        )
        assert.isTrue(Exit.isFailure(failed))
        assert.isTrue(yield* billing.claimWebhook(id, "order.paid", at(0)))
        assert.isFalse(yield* billing.claimWebhook(id, "subscription.updated", at(minute)))
      })
    )

    it.effect("concurrent claims of one webhook id: exactly one wins", () =>
      Effect.gen(function* () {
        const billing = yield* Billing.BillingStore
        const tx = yield* Kernel.Transactor
        const id = `msg_${randomSuffix()}`
        const wins = yield* Effect.all(
          Array.from({ length: 6 }, () => tx.withTransaction(billing.claimWebhook(id, "order.paid", at(0)))),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(wins.filter((won) => won).length, 1)
      })
    )

    it.effect("an org without credit reads as the zero row", () =>
      Effect.gen(function* () {
        const credit = yield* Ai.CreditStore
        const org = yield* givenOrg
        assert.deepStrictEqual(yield* credit.find(org.id), Ai.zeroCredit(org.id))
        assert.deepStrictEqual(yield* credit.ledger(org.id, 50, undefined), [])
      })
    )

    it.effect("append moves the balance with each row; the ledger is newest first, `before` exclusive", () =>
      Effect.gen(function* () {
        const credit = yield* Ai.CreditStore
        const org = yield* givenOrg
        const entry = { orgId: org.id, projectName: null, model: null }
        assert.strictEqual(
          yield* credit.append({ ...entry, kind: "topup", amountMicroCents: 500_000_000, at: at(0) }),
          500_000_000
        )
        assert.strictEqual(
          yield* credit.append({
            ...entry,
            kind: "call",
            amountMicroCents: -700_000_000,
            projectName: "site",
            model: "m",
            at: at(minute)
          }),
          -200_000_000
        )
        const rows = yield* credit.ledger(org.id, 50, undefined)
        assert.deepStrictEqual(
          rows.map((row) => [row.kind, row.amountMicroCents, row.projectName, row.model, row.createdAt]),
          [
            ["call", -700_000_000, "site", "m", at(minute)],
            ["topup", 500_000_000, null, null, at(0)]
          ]
        )
        assert.isTrue(rows[0]!.ledger_id > rows[1]!.ledger_id)
        assert.deepStrictEqual(yield* credit.ledger(org.id, 50, rows[0]!.ledger_id), [rows[1]!])
        assert.deepStrictEqual(yield* credit.ledger(org.id, 1, undefined), [rows[0]!])
        assert.strictEqual((yield* credit.find(org.id)).balanceMicroCents, -200_000_000)
      })
    )

    it.effect("concurrent appends: the balance equals the sum of the ledger", () =>
      Effect.gen(function* () {
        const credit = yield* Ai.CreditStore
        const org = yield* givenOrg
        yield* Effect.all(
          Array.from({ length: 20 }, (_, i) =>
            credit.append({
              orgId: org.id,
              kind: "call",
              amountMicroCents: -(i + 1),
              projectName: null,
              model: null,
              at: at(i)
            })
          ),
          { concurrency: "unbounded" }
        )
        const rows = yield* credit.ledger(org.id, 200, undefined)
        assert.strictEqual(rows.length, 20)
        const sum = rows.reduce((total, row) => total + row.amountMicroCents, 0)
        assert.strictEqual((yield* credit.find(org.id)).balanceMicroCents, sum)
        assert.strictEqual(sum, -210)
      })
    )

    it.effect("setPaymentMethod marks the org, keeping its balance", () =>
      Effect.gen(function* () {
        const credit = yield* Ai.CreditStore
        const org = yield* givenOrg
        yield* credit.append({
          orgId: org.id,
          kind: "topup",
          amountMicroCents: 7,
          projectName: null,
          model: null,
          at: at(0)
        })
        yield* credit.setPaymentMethod(org.id, at(minute))
        const row = yield* credit.find(org.id)
        assert.isTrue(row.hasPaymentMethod)
        assert.strictEqual(row.balanceMicroCents, 7)
      })
    )

    it.effect(
      "setAutoTopup stores the settings; claimAutoTopup counts per day up to perDay, a new day starts again",
      () =>
        Effect.gen(function* () {
          const credit = yield* Ai.CreditStore
          const org = yield* givenOrg
          const settings = { enabled: true, amountMicroCents: 500_000_000, thresholdMicroCents: 100_000_000 }
          yield* credit.setAutoTopup(org.id, settings, at(0))
          assert.deepStrictEqual((yield* credit.find(org.id)).autoTopup, settings)
          const claims = yield* Effect.all(
            Array.from({ length: 6 }, () => credit.claimAutoTopup(org.id, "2031-01-01", 3, at(0))),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(claims.filter((won) => won).length, 3)
          assert.strictEqual(Ai.autoTopupsOn(yield* credit.find(org.id), "2031-01-01"), 3)
          assert.isTrue(yield* credit.claimAutoTopup(org.id, "2031-01-02", 3, at(day)))
          const next = yield* credit.find(org.id)
          assert.strictEqual(Ai.autoTopupsOn(next, "2031-01-02"), 1)
          assert.strictEqual(Ai.autoTopupsOn(next, "2031-01-01"), 0)
          assert.deepStrictEqual(next.autoTopup, settings)
        })
    )

    it.effect("spentSince sums the cost of call rows since the instant, top-ups left out", () =>
      Effect.gen(function* () {
        const credit = yield* Ai.CreditStore
        const org = yield* givenOrg
        const entry = { orgId: org.id, projectName: "site", model: "m" }
        yield* credit.append({ ...entry, kind: "call", amountMicroCents: -5, at: at(0) })
        yield* credit.append({ ...entry, kind: "call", amountMicroCents: -7, at: at(minute) })
        yield* credit.append({ ...entry, kind: "topup", amountMicroCents: 100, at: at(minute) })
        assert.strictEqual(yield* credit.spentSince(org.id, at(0)), 12)
        assert.strictEqual(yield* credit.spentSince(org.id, at(minute)), 7)
        assert.strictEqual(yield* credit.spentSince(org.id, at(day)), 0)
      })
    )

    it.effect("AiKeyStore: one key per project, found by hash; remove deletes it", () =>
      Effect.gen(function* () {
        const keys = yield* Ai.AiKeyStore
        const project = yield* givenProject
        const hash = `hash-${randomSuffix()}`
        assert.isTrue(Option.isNone(yield* keys.find(project.id)))
        const row = {
          projectId: project.id,
          keyHash: hash,
          sealed: { keyId: "k1", ciphertext: "c2VhbGVk" },
          createdAt: at(0)
        }
        yield* keys.insert(row)
        assert.deepStrictEqual(yield* keys.find(project.id), Option.some(row))
        assert.deepStrictEqual(yield* keys.projectOfKey(hash), Option.some(project.id))
        assert.isTrue(yield* keys.remove(project.id))
        assert.isFalse(yield* keys.remove(project.id))
        assert.isTrue(Option.isNone(yield* keys.projectOfKey(hash)))
      })
    )
  })
