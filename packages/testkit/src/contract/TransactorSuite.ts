import { assert, layer } from "@effect/vitest"
import { Identity, Jobs, Kernel, Mail, Orgs } from "@hostplane/core"
import { Cause, Deferred, Effect, Exit, Fiber, type Layer, Option, Schema } from "effect"
import type { Stores } from "../Stores.ts"
import { at, day, makeInvite, makeMessage, makeNotification, makeOrg, makeUser, randomSuffix } from "./Fixtures.ts"

class Boom extends Schema.TaggedError<Boom>()("Boom", { message: Schema.String }) {}

/** One write to every table of every store port, and a check of whether each of them is visible. */
const writeEverything = Effect.gen(function* () {
  const users = yield* Identity.UserStore
  const orgs = yield* Orgs.OrgStore
  const outbox = yield* Mail.MailOutbox
  const audit = yield* Kernel.AuditLog
  const jobs = yield* Jobs.JobStore
  const user = makeUser()
  const org = makeOrg()
  const mail = makeMessage()
  const invite = makeInvite(org.id, { mailId: mail.id })
  const notification = makeNotification(org.id)
  const sessionHash = `session-${randomSuffix()}`
  const stateHash = `state-${randomSuffix()}`
  const action = `contract.${randomSuffix()}`

  const write = Effect.gen(function* () {
    yield* users.insert(user, at(0))
    yield* users.insertSession({ tokenHash: sessionHash, userId: user.id, expiresAt: at(day), createdAt: at(0) })
    yield* users.insertOAuthState({ stateHash, redirect: "http://localhost/", codeVerifier: "v", expiresAt: at(day) })
    yield* orgs.insert(org)
    yield* orgs.addMember(org.id, user.id, "admin", at(0))
    yield* outbox.enqueue(mail, at(0))
    yield* jobs.insert({
      id: mail.id,
      kind: "mail_send",
      key: null,
      payload: {},
      phase: "send",
      runAt: at(0),
      createdAt: at(0)
    })
    yield* orgs.insertInvite(invite)
    yield* orgs.insertNotification(notification)
    yield* audit.record({ action, orgId: org.id, actorId: user.id, target: org.slug, data: {}, at: at(0) })
  })

  /** How many of the ten writes are visible. */
  const visible = Effect.gen(function* () {
    const seen = [
      Option.isSome(yield* users.findById(user.id)),
      Option.isSome(yield* users.findSession(sessionHash, at(0))),
      Option.isSome(yield* users.takeOAuthState(stateHash)),
      Option.isSome(yield* orgs.findById(org.id)),
      Option.isSome(yield* orgs.findMembership(org.id, user.id)),
      Option.isSome(yield* outbox.get(mail.id)),
      Option.isSome(yield* jobs.get(mail.id)),
      Option.isSome(yield* orgs.findInvite(org.id, invite.id)),
      (yield* orgs.listNotifications(org.id, 10)).length > 0,
      (yield* audit.list({ action })).length > 0
    ]
    return seen.filter(Boolean).length
  })

  return { write, visible, org, user }
})

const orgName = (orgId: Kernel.OrgId) =>
  Effect.map(
    Effect.flatMap(Orgs.OrgStore, (orgs) => orgs.findById(orgId)),
    (org) => Option.getOrThrow(org).name
  )

/**
 * The `Transactor` contract: a transaction commits every store write with it or none; nested transactions join the
 * running one as savepoints.
 */
export const transactorSuite = <E>(name: string, store: Layer.Layer<Stores, E>): void =>
  layer(store)(`${name}: Transactor contract`, (it) => {
    it.effect("a transaction that succeeds commits every write and returns its value", () =>
      Effect.gen(function* () {
        const tx = yield* Kernel.Transactor
        const all = yield* writeEverything
        const value = yield* tx.withTransaction(Effect.as(all.write, "done"))
        assert.strictEqual(value, "done")
        assert.strictEqual(yield* all.visible, 10)
      })
    )

    it.effect("a transaction that fails rolls back every write and fails with the same error", () =>
      Effect.gen(function* () {
        const tx = yield* Kernel.Transactor
        const all = yield* writeEverything
        const error = yield* Effect.flip(
          tx.withTransaction(Effect.andThen(all.write, Effect.fail(new Boom({ message: "after the writes" }))))
        )
        assert.deepStrictEqual(error, new Boom({ message: "after the writes" }))
        assert.strictEqual(yield* all.visible, 0)
      })
    )

    it.effect("a transaction that dies rolls back every write", () =>
      Effect.gen(function* () {
        const tx = yield* Kernel.Transactor
        const all = yield* writeEverything
        const exit = yield* Effect.exit(tx.withTransaction(Effect.andThen(all.write, Effect.die("defect"))))
        assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause))
        assert.strictEqual(yield* all.visible, 0)
      })
    )

    it.effect("an interrupted transaction rolls back every write", () =>
      Effect.gen(function* () {
        const tx = yield* Kernel.Transactor
        const all = yield* writeEverything
        const written = yield* Deferred.make<void>()
        const fiber = yield* Effect.forkChild(
          tx.withTransaction(
            Effect.gen(function* () {
              yield* all.write
              yield* Deferred.succeed(written, undefined)
              return yield* Effect.never
            })
          )
        )
        yield* Deferred.await(written)
        yield* Fiber.interrupt(fiber)
        assert.strictEqual(yield* all.visible, 0)
      })
    )

    it.effect("writes of a running transaction are invisible outside it until it commits", () =>
      Effect.gen(function* () {
        const tx = yield* Kernel.Transactor
        const orgs = yield* Orgs.OrgStore
        const org = makeOrg()
        const written = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const fiber = yield* Effect.forkChild(
          tx.withTransaction(
            Effect.gen(function* () {
              yield* orgs.insert(org)
              assert.isTrue(Option.isSome(yield* orgs.findById(org.id)))
              yield* Deferred.succeed(written, undefined)
              yield* Deferred.await(release)
            })
          )
        )
        yield* Deferred.await(written)
        assert.isTrue(Option.isNone(yield* orgs.findById(org.id)))
        assert.isTrue(Option.isNone(yield* orgs.findBySlug(org.slug)))
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(fiber)
        assert.deepStrictEqual(yield* orgs.findById(org.id), Option.some(org))
      })
    )

    it.effect("a nested transaction joins the running one without deadlock and commits with it", () =>
      Effect.gen(function* () {
        const tx = yield* Kernel.Transactor
        const orgs = yield* Orgs.OrgStore
        const outer = makeOrg()
        const inner = makeOrg()
        const value = yield* tx
          .withTransaction(
            Effect.gen(function* () {
              yield* orgs.insert(outer)
              const nested = yield* tx.withTransaction(
                Effect.gen(function* () {
                  yield* orgs.insert(inner)
                  assert.isTrue(Option.isSome(yield* orgs.findById(outer.id)))
                  return yield* tx.withTransaction(Effect.succeed("deep"))
                })
              )
              assert.isTrue(Option.isSome(yield* orgs.findById(inner.id)))
              return nested
            })
          )
          .pipe(Effect.timeout("5 seconds"))
        assert.strictEqual(value, "deep")
        assert.deepStrictEqual(yield* orgs.findById(outer.id), Option.some(outer))
        assert.deepStrictEqual(yield* orgs.findById(inner.id), Option.some(inner))
      })
    )

    it.effect("when the outer transaction fails, the writes of its finished nested transaction roll back too", () =>
      Effect.gen(function* () {
        const tx = yield* Kernel.Transactor
        const orgs = yield* Orgs.OrgStore
        const outer = makeOrg()
        const inner = makeOrg()
        yield* Effect.flip(
          tx.withTransaction(
            Effect.gen(function* () {
              yield* orgs.insert(outer)
              yield* tx.withTransaction(orgs.insert(inner))
              return yield* new Boom({ message: "outer fails" })
            })
          )
        )
        assert.isTrue(Option.isNone(yield* orgs.findById(outer.id)))
        assert.isTrue(Option.isNone(yield* orgs.findById(inner.id)))
      })
    )

    it.effect("a failed nested transaction that the outer one catches undoes only its own writes", () =>
      Effect.gen(function* () {
        const tx = yield* Kernel.Transactor
        const orgs = yield* Orgs.OrgStore
        const outer = makeOrg()
        const inner = makeOrg()
        const after = makeOrg()
        yield* tx.withTransaction(
          Effect.gen(function* () {
            yield* orgs.insert(outer)
            const error = yield* Effect.flip(
              tx.withTransaction(Effect.andThen(orgs.insert(inner), Effect.fail(new Boom({ message: "inner fails" }))))
            )
            assert.strictEqual(error._tag, "Boom")
            assert.isTrue(Option.isNone(yield* orgs.findById(inner.id)))
            yield* orgs.insert(after)
          })
        )
        assert.deepStrictEqual(yield* orgs.findById(outer.id), Option.some(outer))
        assert.isTrue(Option.isNone(yield* orgs.findById(inner.id)))
        assert.deepStrictEqual(yield* orgs.findById(after.id), Option.some(after))
      })
    )

    it.effect("a failed transaction leaves earlier committed values as they were", () =>
      Effect.gen(function* () {
        const tx = yield* Kernel.Transactor
        const orgs = yield* Orgs.OrgStore
        const org = makeOrg({ name: "before" })
        yield* orgs.insert(org)
        yield* Effect.flip(
          tx.withTransaction(
            Effect.andThen(orgs.rename(org.id, "during"), Effect.fail(new Boom({ message: "undo the rename" })))
          )
        )
        assert.strictEqual(yield* orgName(org.id), "before")
      })
    )

    it.effect("concurrent transactions that lock the org lose no update", () =>
      Effect.gen(function* () {
        const tx = yield* Kernel.Transactor
        const orgs = yield* Orgs.OrgStore
        const org = makeOrg({ name: "0" })
        yield* orgs.insert(org)
        yield* Effect.forEach(
          ["1", "2", "3", "4"],
          (step) =>
            tx.withTransaction(
              Effect.gen(function* () {
                yield* orgs.lock(org.id)
                yield* orgs.rename(org.id, `${yield* orgName(org.id)}${step}`)
              })
            ),
          { concurrency: "unbounded", discard: true }
        )
        const name = yield* orgName(org.id)
        assert.strictEqual(name.length, 5)
        assert.deepStrictEqual(name.split("").sort(), ["0", "1", "2", "3", "4"])
      })
    )
  })
