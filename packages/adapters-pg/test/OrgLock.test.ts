import { assert, layer } from "@effect/vitest"
import type { Actor } from "@hostplane/core/kernel/Actor"
import { UserStore } from "@hostplane/core/identity/UserStore"
import { makeId } from "@hostplane/core/kernel/Ids"
import { Members } from "@hostplane/core/orgs/Members"
import { Orgs } from "@hostplane/core/orgs/Orgs"
import { OrgStore } from "@hostplane/core/orgs/OrgStore"
import { EnvelopeStorePg, OrgStorePg, ProjectStorePg } from "@hostplane/adapters-pg"
import { EnvelopeStore } from "@hostplane/core/kernel/EnvelopeStore"
import { ProjectStore } from "@hostplane/core/projects/ProjectStore"
import { Deferred, Effect, Layer, Option, Ref, Result } from "effect"
import { coreOnPostgres } from "./support/coreOnPostgres.ts"

/**
 * The PostgreSQL `OrgStore` whose `countAdmins` counts and then waits (up to 1 s) until two callers have counted, so
 * two "count admins, then demote" transactions that are not serialised both count before either demotes.
 * `withLock: false` turns `lock` into a no-op.
 */
const rendezvousOrgStore = (withLock: boolean) =>
  Layer.effect(
    OrgStore,
    Effect.gen(function* () {
      const store = yield* OrgStore
      const arrived = yield* Ref.make(0)
      const bothArrived = yield* Deferred.make<void>()
      const rendezvous = Effect.gen(function* () {
        if ((yield* Ref.updateAndGet(arrived, (n) => n + 1)) >= 2) yield* Deferred.succeed(bothArrived, undefined)
        yield* Deferred.await(bothArrived).pipe(Effect.timeoutOption("1 second"))
      })
      return OrgStore.of({
        ...store,
        lock: withLock ? store.lock : () => Effect.void,
        // Count first, then wait: neither caller can demote before both have counted, however the two fibers are
        // scheduled after the rendezvous (waiting before the count let one count after the other had committed).
        countAdmins: (orgId) => Effect.tap(store.countAdmins(orgId), () => rendezvous)
      })
    })
  ).pipe(Layer.provide(OrgStorePg.layer))

/**
 * The write envelope takes the org lock with its reads in one statement (`EnvelopeStore.lock`); without the lock it
 * makes the same reads, one by one, and locks nothing.
 */
const envelopeWithoutLock = Layer.effect(
  EnvelopeStore,
  Effect.gen(function* () {
    const envelope = yield* EnvelopeStore
    const orgs = yield* OrgStore
    const projects = yield* ProjectStore
    return EnvelopeStore.of({
      ...envelope,
      lock: (orgId, userId, projectId) =>
        Effect.gen(function* () {
          const org = yield* orgs.findById(orgId)
          const role = yield* orgs.findMembership(orgId, userId)
          const project = projectId === undefined ? Option.none() : yield* projects.findById(projectId)
          return { org, role, project }
        })
    })
  })
).pipe(Layer.provide(Layer.mergeAll(EnvelopeStorePg.layer, OrgStorePg.layer, ProjectStorePg.layer)))

const givenActor = Effect.fnUntraced(function* (name: string) {
  const subject = `${name}-${crypto.randomUUID()}`
  const { user } = yield* (yield* UserStore).insert(
    { id: makeId("usr", `usr_${crypto.randomUUID()}`), provider: "dev", subject, email: null, name },
    new Date().toISOString()
  )
  return {
    userId: user.id,
    provider: user.provider,
    subject: user.subject,
    email: user.email,
    name: user.name
  } satisfies Actor
})

/** An org whose only two admins each demote themselves at the same moment. */
const raceTwoAdminsDemotingThemselves = Effect.gen(function* () {
  const orgs = yield* Orgs
  const members = yield* Members
  const store = yield* OrgStore
  const alice = yield* givenActor("alice")
  const bob = yield* givenActor("bob")
  const org = yield* orgs.create(alice, { name: "Race" })
  yield* members.add(alice, org.slug, { provider: bob.provider, subject: bob.subject, role: "admin" })
  const outcomes = yield* Effect.all(
    [alice, bob].map((actor) => Effect.result(members.setRole(actor, org.slug, actor.userId, "member"))),
    { concurrency: "unbounded" }
  )
  const row = Option.getOrThrow(yield* store.findBySlug(org.slug))
  return { outcomes, admins: yield* store.countAdmins(row.id) }
})

layer(coreOnPostgres(rendezvousOrgStore(true)), { excludeTestServices: true })(
  "OrgStorePg.lock with the core Members service",
  (it) => {
    it.effect("two admins demoting themselves at once: one succeeds, one gets last_admin, one admin is left", () =>
      Effect.gen(function* () {
        const { outcomes, admins } = yield* raceTwoAdminsDemotingThemselves
        assert.strictEqual(outcomes.filter(Result.isSuccess).length, 1)
        const failures = outcomes.filter(Result.isFailure).map((outcome) => outcome.failure._tag)
        assert.deepStrictEqual(failures, ["LastAdmin"])
        assert.strictEqual(admins, 1)
      })
    )
  }
)

layer(coreOnPostgres(rendezvousOrgStore(false), envelopeWithoutLock), { excludeTestServices: true })(
  "the same race without the org lock",
  (it) => {
    it.effect("both demotions pass and the org is left without an admin: the race the lock prevents is real", () =>
      Effect.gen(function* () {
        const { outcomes, admins } = yield* raceTwoAdminsDemotingThemselves
        assert.strictEqual(outcomes.filter(Result.isSuccess).length, 2)
        assert.strictEqual(admins, 0)
      })
    )
  }
)
