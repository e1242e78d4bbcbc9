import { assert, layer } from "@effect/vitest"
import { Email, Kernel, Orgs, Projects } from "@hostplane/core"
import { Effect, Exit, type Layer, Option, Schema } from "effect"
import { at, day, givenProject, makeOrg, makeProject, minute, randomSuffix } from "../contract/Fixtures.ts"

/** What the email contract needs: log rows belong to projects, and claims join transactions. */
export type EmailStoreSuiteServices = Email.EmailStore | Orgs.OrgStore | Projects.ProjectStore | Kernel.Transactor

class Boom extends Schema.TaggedError<Boom>()("Boom", { message: Schema.String }) {}

const row = (projectId: Kernel.ProjectId, overrides: Partial<Email.MailLogRow> = {}): Email.MailLogRow => ({
  id: Kernel.makeId("mail", `mail_${randomSuffix()}`),
  projectId,
  direction: "out",
  from: "app@example.test",
  to: "someone@example.test",
  subject: "hello",
  outcome: "sent",
  size: 3,
  spf: null,
  hasRaw: true,
  createdAt: at(0),
  providerMessageId: `ses-${randomSuffix()}`,
  raw: new Uint8Array([0, 255, 13]),
  ...overrides
})

/** The `EmailStore` contract: every adapter must pass it; projects, addresses and ids are unique per test. */
export const emailStoreSuite = <E>(name: string, store: Layer.Layer<EmailStoreSuiteServices, E>): void =>
  layer(store)(`${name}: EmailStore contract`, (it) => {
    it.effect("an address belongs to one project; saving it again updates the grant; another project is taken", () =>
      Effect.gen(function* () {
        const email = yield* Email.EmailStore
        const one = yield* givenProject
        const two = yield* givenProject
        const address = `${randomSuffix()}@mail.example.test`
        yield* email.saveAddress({ projectId: one.id, address, granted: true })
        yield* email.saveAddress({ projectId: one.id, address, granted: false })
        assert.deepStrictEqual(
          yield* email.findAddress(address),
          Option.some({ projectId: one.id, address, granted: false })
        )
        assert.deepStrictEqual(
          yield* email.addressOf(one.id),
          Option.some({ projectId: one.id, address, granted: false })
        )
        const taken = yield* Effect.flip(email.saveAddress({ projectId: two.id, address, granted: true }))
        assert.strictEqual(taken._tag, "EmailAddressTaken")
        assert.isTrue(Option.isNone(yield* email.addressOf(two.id)))
      })
    )

    it.effect("reserveOut holds a row within the cap while granted; confirm shows it, release removes it", () =>
      Effect.gen(function* () {
        const email = yield* Email.EmailStore
        const project = yield* givenProject
        const limit = { since: at(-60), cap: 2, now: at(0), leaseUntil: at(30_000) }
        const held = row(project.id, { providerMessageId: null })
        assert.strictEqual(yield* email.reserveOut(held, limit), "not_granted")
        yield* email.saveAddress({ projectId: project.id, address: `${randomSuffix()}@m.test`, granted: true })
        assert.strictEqual(yield* email.reserveOut(held, limit), "reserved")
        assert.isTrue(Option.isNone(yield* email.getLog(project.id, held.id)))
        assert.deepStrictEqual(yield* email.countSince(project.id, at(-60)), { sent: 0, received: 0 })
        const second = row(project.id, { providerMessageId: null })
        assert.strictEqual(yield* email.reserveOut(second, limit), "reserved")
        // Held rows count toward the cap.
        assert.strictEqual(yield* email.reserveOut(row(project.id), limit), "capped")
        yield* email.confirmOut(held, "ses-1")
        yield* email.releaseOut(second.id)
        const shown = yield* email.getLog(project.id, held.id)
        assert.strictEqual(Option.getOrThrow(shown).providerMessageId, "ses-1")
        assert.isTrue(Option.isNone(yield* email.getLog(project.id, second.id)))
        assert.strictEqual(yield* email.reserveOut(row(project.id), limit), "reserved")
        // Rows before `since` no longer count.
        assert.strictEqual(yield* email.reserveOut(row(project.id), { ...limit, since: at(1), cap: 1 }), "reserved")
      })
    )

    it.effect(
      "a held row counts only while its lease runs: renewed it counts, ended it is deleted and frees the slot",
      () =>
        Effect.gen(function* () {
          const email = yield* Email.EmailStore
          const project = yield* givenProject
          yield* email.saveAddress({ projectId: project.id, address: `${randomSuffix()}@m.test`, granted: true })
          const hourAgo = at(-60 * minute)
          // A process that died mid-send: its row was leased until 30 s after it was taken, and never renewed.
          const dead = row(project.id, { providerMessageId: null })
          const live = row(project.id, { providerMessageId: null })
          assert.strictEqual(
            yield* email.reserveOut(dead, { since: hourAgo, cap: 2, now: at(0), leaseUntil: at(30_000) }),
            "reserved"
          )
          assert.strictEqual(
            yield* email.reserveOut(live, { since: hourAgo, cap: 2, now: at(0), leaseUntil: at(30_000) }),
            "reserved"
          )
          // The live one renews; the dead one does not.
          assert.isTrue(yield* email.renewOut(live.id, at(60_000)))
          const before = { since: hourAgo, cap: 2, now: at(29_000), leaseUntil: at(59_000) }
          assert.strictEqual(yield* email.reserveOut(row(project.id), before), "capped")
          const after = { since: hourAgo, cap: 2, now: at(30_000), leaseUntil: at(60_000) }
          const next = row(project.id, { providerMessageId: null })
          assert.strictEqual(yield* email.reserveOut(next, after), "reserved")
          // The dead row is gone (its renew finds nothing), the live one still counts: the cap is reached again.
          assert.isFalse(yield* email.renewOut(dead.id, at(90_000)))
          assert.strictEqual(yield* email.reserveOut(row(project.id), after), "capped")
          // A process that only stalled past its lease still gets its sent message logged.
          yield* email.confirmOut(dead, "ses-late")
          assert.strictEqual(Option.getOrThrow(yield* email.getLog(project.id, dead.id)).providerMessageId, "ses-late")
          // releaseExpired sweeps every project's ended leases, not live ones or shown rows.
          yield* email.releaseExpired(at(59_000))
          assert.isTrue(yield* email.renewOut(live.id, at(60_000)))
          assert.isTrue((yield* email.releaseExpired(at(60_000))) >= 2)
          assert.isFalse(yield* email.renewOut(next.id, at(120_000)))
          assert.isFalse(yield* email.renewOut(live.id, at(120_000)))
          assert.isTrue(Option.isSome(yield* email.getLog(project.id, dead.id)))
          assert.deepStrictEqual(yield* email.countSince(project.id, hourAgo), { sent: 1, received: 0 })
        })
    )

    it.effect("a notification id is claimed once; a claim in a failed transaction is undone", () =>
      Effect.gen(function* () {
        const email = yield* Email.EmailStore
        const tx = yield* Kernel.Transactor
        const id = `sns-${randomSuffix()}`
        const failed = yield* Effect.exit(
          tx.withTransaction(
            Effect.andThen(email.claimNotification(id, "Notification", at(0)), Effect.fail(new Boom({ message: "x" })))
          )
        )
        assert.isTrue(Exit.isFailure(failed))
        assert.isTrue(yield* email.claimNotification(id, "Notification", at(0)))
        assert.isFalse(yield* email.claimNotification(id, "Notification", at(minute)))
      })
    )

    it.effect("the log is newest first, by direction, paged strictly after a cursor; raw bytes come back as kept", () =>
      Effect.gen(function* () {
        const email = yield* Email.EmailStore
        const project = yield* givenProject
        const rows = [
          row(project.id, { createdAt: at(0) }),
          row(project.id, { createdAt: at(minute), direction: "in", outcome: "received", spf: "pass" }),
          row(project.id, { createdAt: at(minute), raw: null, hasRaw: false }),
          row(project.id, { createdAt: at(2 * minute) })
        ]
        for (const r of rows) yield* email.insertLog(r)
        const all = yield* email.listLog(project.id, { direction: undefined, after: undefined, limit: 10 })
        assert.strictEqual(all.length, 4)
        assert.strictEqual(all[0]!.id, rows[3]!.id)
        assert.strictEqual(all[3]!.id, rows[0]!.id)
        const pageOne = yield* email.listLog(project.id, { direction: undefined, after: undefined, limit: 2 })
        const last = pageOne[1]!
        const pageTwo = yield* email.listLog(project.id, {
          direction: undefined,
          after: { createdAt: last.createdAt, id: last.id },
          limit: 2
        })
        assert.deepStrictEqual(
          [...pageOne, ...pageTwo].map((r) => r.id),
          all.map((r) => r.id)
        )
        const incoming = yield* email.listLog(project.id, { direction: "in", after: undefined, limit: 10 })
        assert.deepStrictEqual(
          incoming.map((r) => r.id),
          [rows[1]!.id]
        )
        const kept = yield* email.getLog(project.id, rows[0]!.id)
        assert.deepStrictEqual(
          Option.map(kept, (r) => [...(r.raw ?? [])]),
          Option.some([0, 255, 13])
        )
        assert.deepStrictEqual(
          Option.map(kept, (r) => r.hasRaw),
          Option.some(true)
        )
        const other = yield* givenProject
        assert.isTrue(Option.isNone(yield* email.getLog(other.id, rows[0]!.id)))
      })
    )

    it.effect("an outcome is set on the out rows of a transport message id only", () =>
      Effect.gen(function* () {
        const email = yield* Email.EmailStore
        const project = yield* givenProject
        const messageId = `ses-${randomSuffix()}`
        const out = row(project.id, { providerMessageId: messageId })
        const inbound = row(project.id, { providerMessageId: messageId, direction: "in", outcome: "received" })
        yield* email.insertLog(out)
        yield* email.insertLog(inbound)
        assert.strictEqual(yield* email.setOutcome(messageId, "bounced"), 1)
        assert.strictEqual(yield* email.setOutcome("unknown", "bounced"), 0)
        const outcomes = (yield* email.listLog(project.id, { direction: undefined, after: undefined, limit: 10 })).map(
          (r) => [r.direction, r.outcome]
        )
        assert.sameDeepMembers(outcomes, [
          ["out", "bounced"],
          ["in", "received"]
        ])
      })
    )

    it.effect("the purge drops rows older than the cutoff of their org's plan; counts are by direction since", () =>
      Effect.gen(function* () {
        const email = yield* Email.EmailStore
        const free = yield* givenProject
        const proOrg = makeOrg({ plan: "pro" })
        yield* (yield* Orgs.OrgStore).insert(proOrg)
        const pro = makeProject(proOrg.id)
        yield* (yield* Projects.ProjectStore).insert(pro)
        const oldFree = row(free.id, { createdAt: at(-40 * day) })
        const keptFree = row(free.id, { createdAt: at(-10 * day), direction: "in", outcome: "received" })
        const keptPro = row(pro.id, { createdAt: at(-40 * day) })
        const oldPro = row(pro.id, { createdAt: at(-400 * day) })
        for (const r of [oldFree, keptFree, keptPro, oldPro]) yield* email.insertLog(r)
        assert.deepStrictEqual(yield* email.countSince(free.id, at(-50 * day)), { sent: 1, received: 1 })
        assert.deepStrictEqual(yield* email.countSince(free.id, at(-20 * day)), { sent: 0, received: 1 })
        yield* email.purgeLog({ free: at(-30 * day), pro: at(-365 * day) })
        const ids = (projectId: Kernel.ProjectId) =>
          Effect.map(email.listLog(projectId, { direction: undefined, after: undefined, limit: 10 }), (rows) =>
            rows.map((r) => r.id)
          )
        assert.deepStrictEqual(yield* ids(free.id), [keptFree.id])
        assert.deepStrictEqual(yield* ids(pro.id), [keptPro.id])
      }).pipe(Effect.orDie)
    )
  })
